"""``nlsim embed``: corpus order, float32 unit rows, conversion, sidecar, cache and errors."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlsim.commands import embed
from nlsim.errors import ConfigError, StateError


def run_embed(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="nlsim")
    sub = parser.add_subparsers(dest="command", required=True)
    embed.register(sub)
    args = parser.parse_args(["embed", *argv])
    return args.func(args)


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    p = tmp_path / "news.csv"
    p.write_text(
        "id,title,description\n"
        "n1,Storm warning issued for the coast,Heavy rain expected\n"
        "n2,Central bank raises rates,\n"
        "n3,Storm warning for the coast issued,Heavy rain is expected\n",
        encoding="utf-8",
    )
    return p


@pytest.mark.slow
def test_writes_rows_in_corpus_order(corpus: Path, tmp_path: Path, l3, monkeypatch) -> None:  # noqa: ANN001
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    out = tmp_path / "emb.npy"
    assert (
        run_embed(
            [
                "--corpus",
                str(corpus),
                "--out",
                str(out),
                "--model",
                str(l3.path),
                "--convert",
                "none",
                "--no-progress",
                "--batch-size",
                "2",
            ]
        )
        == 0
    )
    emb = np.load(out)
    assert emb.shape == (3, 384) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1, atol=1e-5)
    expected = l3.encode(
        [
            "Storm warning issued for the coast Heavy rain expected",
            "Central bank raises rates",
            "Storm warning for the coast issued Heavy rain is expected",
        ],
        progress=False,
    )
    np.testing.assert_allclose(emb, expected, atol=2e-5)
    meta = json.loads(out.with_suffix(".json").read_text())
    assert meta["ids"] == ["n1", "n2", "n3"] and meta["fingerprint"] == l3.fingerprint
    assert meta["conversion"] == "none" and meta["text_fields"] == ["title", "description"]
    assert list((tmp_path / "home" / "embeddings").glob("*.npy")), "cache entry not written"


def test_title_only_and_cache_hit(corpus: Path, tmp_path: Path, l3, monkeypatch, capsys) -> None:  # noqa: ANN001
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    out = tmp_path / "t.npy"
    argv = [
        "--corpus",
        str(corpus),
        "--out",
        str(out),
        "--model",
        str(l3.path),
        "--text-fields",
        "title",
        "--no-progress",
    ]
    run_embed(argv)
    first = np.load(out)
    run_embed(argv)
    assert "from cache" in capsys.readouterr().out
    np.testing.assert_array_equal(np.load(out), first)
    second = l3.encode(["Central bank raises rates"], progress=False)[0]
    np.testing.assert_allclose(first[1], second, atol=2e-5)


def test_more_threads_than_cpus_still_embed(corpus: Path, tmp_path: Path, l3, monkeypatch) -> None:  # noqa: ANN001
    """A thread count above the machine's CPUs (a deployment's setting made for a larger machine) runs,
    slower; only counts no machine could start are refused."""
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    out = tmp_path / "t.npy"
    argv = ["--corpus", str(corpus), "--out", str(out), "--model", str(l3.path), "--no-progress"]
    assert run_embed([*argv, "--threads", "4"]) == 0
    assert np.load(out).shape[0] == 3


def test_bad_arguments(corpus: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=".npy"):
        run_embed(["--corpus", str(corpus), "--out", str(tmp_path / "e.txt")])
    with pytest.raises(SystemExit):
        run_embed(["--corpus", str(corpus), "--out", str(tmp_path / "e.npy"), "--convert", "zz"])


@pytest.fixture()
def broken_model(tmp_path: Path, l3) -> Path:  # noqa: ANN001
    """A Hugging Face folder of MiniLM-L3 (another tool's: no nlsim.json) whose word embeddings are NaN, as a
    fine-tuning that diverged leaves them."""
    import copy

    import torch

    folder = tmp_path / "broken"
    model = copy.deepcopy(l3.model)
    with torch.no_grad():
        model.get_input_embeddings().weight.fill_(float("nan"))
    model.save_pretrained(folder)
    l3.tokenizer.save_pretrained(folder)
    return folder


def test_a_model_embedding_texts_as_nan_is_refused_and_nothing_is_written(
    corpus: Path, tmp_path: Path, broken_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The NaN matrix was written with its sidecar, exit 0, and kept in the embedding cache."""
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    out = tmp_path / "emb.npy"
    argv = ["--corpus", str(corpus), "--out", str(out), "--model", str(broken_model), "--convert", "none"]
    with pytest.raises(StateError, match=r"embedded 3 of 3 texts as vectors that are not numbers \(NaN"):
        run_embed([*argv, "--no-progress"])
    assert not out.exists() and not out.with_suffix(".json").exists()
    assert not list((tmp_path / "home").rglob("embeddings/*.npy"))  # nor kept in the cache


def test_a_dedup_with_such_a_model_stops_before_any_report(
    corpus: Path, tmp_path: Path, broken_model: Path
) -> None:
    """The run went on with the NaN vectors and wrote a report of no pair at all, exit 0, saying nothing."""
    from tests.command import nlsim, refused

    rep = tmp_path / "rep"
    args = ["--model", broken_model, "--convert", "none", "--threshold", "0.8", "--no-cache", "--no-progress"]
    proc = nlsim("dedup", "--corpus", corpus, "--out", rep, *args, cwd=tmp_path)
    refused(proc, 1, "the model broken embedded 3 of 3 texts as vectors that are not numbers")
    assert not rep.exists()


def test_a_run_stopped_between_the_matrix_and_its_record_leaves_no_pair_that_looks_whole(
    corpus: Path,
    tmp_path: Path,
    l3,
    monkeypatch: pytest.MonkeyPatch,  # noqa: ANN001
) -> None:
    """The record (ids, model) is written after the matrix; a run stopped between the two left the new
    matrix beside the old run's record, and nothing told the pair apart from a whole one (same count, other
    texts). The record now holds the size and SHA-256 of the matrix it describes."""
    from nlsim.io import atomic
    from nlsim.io.atomic import file_sha256

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    out = tmp_path / "emb.npy"
    argv = ["--corpus", str(corpus), "--out", str(out), "--model", str(l3.path), "--convert", "none"]
    run_embed([*argv, "--text-fields", "title", "--no-progress"])
    record = json.loads(out.with_suffix(".json").read_text())
    assert record["npy"] == {"sha256": file_sha256(out), "bytes": out.stat().st_size}  # a whole pair

    def stopped(path: Path, text: str) -> None:
        raise KeyboardInterrupt  # Ctrl-C once the matrix is in place, before its record

    monkeypatch.setattr(atomic, "atomic_write_text", stopped)
    with pytest.raises(KeyboardInterrupt):
        run_embed([*argv, "--text-fields", "title,description", "--no-progress"])
    left = json.loads(out.with_suffix(".json").read_text())
    assert left == record and len(np.load(out)) == left["count"]  # the old record, a new matrix as long
    assert left["npy"]["sha256"] != file_sha256(out)  # ... which it does not describe


@pytest.mark.slow
def test_a_title_holding_control_or_format_characters_is_embedded_as_the_one_without(
    tmp_path: Path,
    l3,  # noqa: ANN001
    monkeypatch,  # noqa: ANN001
) -> None:
    """``nlsim embed`` reads the texts as a dedup run does (:func:`nlsim.io.cells.model_text`): a title with
    Word's line break between two words, a NUL, colour codes or a zero-width space is embedded as the title
    without them (the model read ``north\\x0bkill`` as ``northkill``)."""
    from tests.dedup.test_window import CLEAN, DAMAGED

    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    path = tmp_path / "news.parquet"
    pd.DataFrame({"id": [f"n{i}" for i in range(len(DAMAGED) + 1)], "title": [CLEAN, *DAMAGED]}).to_parquet(
        path
    )
    out = tmp_path / "emb.npy"
    argv = [
        "--corpus",
        str(path),
        "--out",
        str(out),
        "--model",
        str(l3.path),
        "--convert",
        "none",
        "--no-progress",
    ]
    assert run_embed(argv) == 0
    emb = np.load(out)
    np.testing.assert_allclose(emb[1:] @ emb[0], 1.0, atol=1e-5)


def test_a_text_longer_than_the_model_reads_is_said(
    tmp_path: Path,
    l3,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A description longer than the tokens the model reads was cut without a word by ``nlsim embed``, where
    a dedup run of the same corpus says how many texts run past them: two items sharing a title and the
    beginning of a lead had one vector, whatever followed. ``nlsim embed`` says it the same way (count, an
    example id, the tokens read), on a cache hit too; a corpus of short texts hears nothing of it."""
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    path = tmp_path / "news.csv"
    lead = " ".join(f"word{i}" for i in range(400))
    path.write_text(
        f"id,title,description\nn1,Storm warning,Heavy rain\nn2,Storm warning,{lead}\n", encoding="utf-8"
    )
    out = tmp_path / "emb.npy"
    argv = ["--corpus", str(path), "--out", str(out), "--model", str(l3.path), "--convert", "none"]
    for _ in range(2):  # computed, then from the cache
        caplog.clear()
        with caplog.at_level("WARNING", logger="nlsim"):
            assert run_embed([*argv, "--no-progress"]) == 0
        said = [r.getMessage() for r in caplog.records if "long texts" in r.getMessage()]
        assert len(said) == 1 and "1 item(s)" in said[0] and "'n2'" in said[0], caplog.text
        assert f"{l3.max_length} tokens" in said[0]
    caplog.clear()
    with caplog.at_level("WARNING", logger="nlsim"):
        assert run_embed([*argv, "--no-progress", "--text-fields", "title"]) == 0
    assert "long texts" not in caplog.text


def test_a_text_the_model_reads_nothing_of_is_said(
    tmp_path: Path,
    l3,  # noqa: ANN001
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Titles the model reads as unknown tokens only (``😀😀`` to MiniLM) embed as one vector whatever they
    say, so any two are alike at 1.0; a dedup run says so and keeps them out of its pairs, ``nlsim embed``
    wrote them without a word. It says how many, with an example id and text, on a cache hit too."""
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    path = tmp_path / "news.csv"
    path.write_text("id,title\nn1,Storm warning\nn2,😀😀\nn3,🎉\n", encoding="utf-8")
    out = tmp_path / "emb.npy"
    argv = ["--corpus", str(path), "--out", str(out), "--model", str(l3.path), "--convert", "none"]
    for _ in range(2):  # computed, then from the cache
        caplog.clear()
        with caplog.at_level("WARNING", logger="nlsim"):
            assert run_embed([*argv, "--no-progress"]) == 0
        said = [r.getMessage() for r in caplog.records if "unreadable texts" in r.getMessage()]
        assert len(said) == 1 and "2 item(s)" in said[0] and "'n2'" in said[0], caplog.text
    emb = np.load(out)
    assert float(emb[1] @ emb[2]) > 0.999  # what it warns of: one vector for both
