"""End-to-end behaviour of the dedup pipeline on the bundled corpora."""

import contextlib
import dataclasses
import itertools
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from nlsim.dedup.config import DedupConfig
from nlsim.dedup.run import run_dedup
from nlsim.errors import ConfigError, InputError

E5 = "multilingual-e5-small"


@pytest.fixture(scope="module")
def bbc_report(tmp_path_factory, fast_encoder, repo_root):
    out = tmp_path_factory.mktemp("bbc")
    # The lead paragraph is what the wire copies share; 12 of the identical-body pairs carry rewritten titles.
    cfg = DedupConfig.of(
        corpus=repo_root / "data/bbc.parquet",
        out=out,
        model="paraphrase-MiniLM-L3-v2",
        convert="none",
        threshold=0.95,
        text_fields=("description",),
        cache=False,
        progress=False,
    )
    return run_dedup(cfg, encoder=fast_encoder)


@pytest.mark.slow
def test_every_identical_body_pair_is_a_duplicate_in_one_cluster(bbc_report, repo_root):
    corpus = pd.read_parquet(repo_root / "data/bbc.parquet")
    groups = corpus.groupby("body")["id"].apply(list)
    same_body = [tuple(sorted(p)) for ids in groups if len(ids) > 1 for p in itertools.combinations(ids, 2)]
    assert len(same_body) >= 100  # the corpus's own, unplanted duplicates
    reported = {tuple(sorted(p)) for p in bbc_report.pairs[["id_a", "id_b"]].itertuples(index=False)}
    missing = [p for p in same_body if p not in reported]
    assert not missing, f"{len(missing)} identical-body pairs not reported, e.g. {missing[:3]}"
    cluster_of = {}
    for row in bbc_report.clusters.itertuples():
        for member in row.member_ids:
            cluster_of[member] = row.cluster_id
    assert all(cluster_of[a] == cluster_of[b] for a, b in same_body)


@pytest.mark.slow
def test_report_files_written(bbc_report):
    out = bbc_report.out
    for name in ("pairs.parquet", "clusters.parquet", "index.html", "summary.md", "run.json", "overview.png"):
        assert (out / name).is_file()
    clusters = pd.read_parquet(out / "clusters.parquet")
    assert (clusters["size"] >= 2).all()
    assert clusters["size"].sum() == len(set(clusters["member_ids"].explode()))
    assert bbc_report.summary["threshold_source"] == "given with --threshold"
    # the rule that made the clusters is named in the record and the summary (the default here)
    rule = "support 0.4; 5+ items need links +0.02 over the threshold"
    assert bbc_report.summary["cluster_rule"] == rule
    assert f"- cluster rule: {rule}" in (out / "summary.md").read_text()


def test_a_batch_runs_result_names_the_report_files_not_nlsims_marker(bbc_report):
    """The result's files are the report's (each at its path); the marker that says nlsim wrote the folder
    is none of them. A batch run keeps no window: its record names no retention."""
    assert {"pairs.parquet", "clusters.parquet", "run.json", "index.html"} <= set(bbc_report.files)
    assert not [name for name in bbc_report.files if name.startswith(".")]
    assert all(path == bbc_report.report_dir / name for name, path in bbc_report.files.items())
    assert bbc_report.stats.mode == "batch" and bbc_report.stats.retention_days is None


@pytest.mark.slow
def test_simplified_and_traditional_copies_cluster_only_with_conversion(tmp_path, repo_root):
    """The same 200 headlines in Simplified and in Traditional: conversion puts each copy with its twin."""
    from nlsim.encoders import load_encoder

    thuc = pd.read_parquet(repo_root / "data/thucnews.parquet").iloc[:200]
    corpus = pd.concat(
        [
            pd.DataFrame({"id": "s-" + thuc["id"], "title": thuc["title_zh_cn"], "source": "mainland"}),
            pd.DataFrame({"id": "t-" + thuc["id"], "title": thuc["title"], "source": "taiwan"}),
        ]
    )
    corpus.to_parquet(tmp_path / "mixed.parquet")
    encoder = load_encoder(E5)
    together = {}
    for mode in ("tw2sp", "none"):
        result = run_dedup(
            DedupConfig.of(
                corpus=tmp_path / "mixed.parquet",
                out=tmp_path / mode,
                model=E5,
                convert=mode,
                threshold=0.97,
                cache=False,
                progress=False,
            ),
            encoder=encoder,
        )
        cluster_of = {m: r.cluster_id for r in result.clusters.itertuples() for m in r.member_ids}
        together[mode] = sum(
            1
            for i in thuc["id"]
            if cluster_of.get(f"s-{i}") is not None and cluster_of.get(f"s-{i}") == cluster_of.get(f"t-{i}")
        )
    assert together["tw2sp"] >= 198  # converted, the twins are (near-)identical text
    assert together["none"] < 100  # unconverted, most twins fall below the same threshold
    print(
        f"twins in one cluster: with tw2sp {together['tw2sp']}/200, without conversion {together['none']}/200"
    )


def test_no_threshold_is_an_error_not_a_default(tmp_path, repo_root, fast_encoder):
    cfg = DedupConfig.of(
        corpus=repo_root / "data/bbc.parquet",
        out=tmp_path,
        model="paraphrase-MiniLM-L3-v2",
        convert="none",
        cache=False,
        progress=False,
    )
    with pytest.raises(ConfigError, match="no threshold for model") as refused:
        run_dedup(cfg, encoder=fast_encoder)
    assert not (tmp_path / "pairs.parquet").exists()
    # the way most runs want: the model store's promoted model, with its calibration
    assert "Pass --model current (the model store's promoted model, with its calibration" in str(
        refused.value
    )


def test_threads_bound_torch_onnx_runtime_and_faiss(tmp_path, repo_root):
    """--threads reaches every library that computes: torch and ONNX Runtime through the encoder's load,
    FAISS before the index is built."""
    import faiss
    import torch

    before = faiss.omp_get_max_threads()
    corpus = tmp_path / "c.parquet"
    pd.read_parquet(repo_root / "data/bbc.parquet").head(40).to_parquet(corpus, index=False)
    cfg = DedupConfig.of(
        corpus=corpus,
        out=tmp_path / "out",
        model="paraphrase-MiniLM-L3-v2",
        convert="none",
        threshold=0.95,
        cache=False,
        progress=False,
        threads=1,
    )
    try:
        torch.set_num_threads(2)
        faiss.omp_set_num_threads(2)
        run_dedup(cfg)
        assert torch.get_num_threads() == 1 and faiss.omp_get_max_threads() == 1
    finally:
        faiss.omp_set_num_threads(before)
    with pytest.raises(ConfigError, match=r"--threads must be >= 1 \(the CPU threads to use\), got 0"):
        cfg.with_(threads=0)


def test_calibration_file_sets_threshold(tmp_path, repo_root, fast_encoder):
    import json

    cal = tmp_path / "cal.json"
    cal.write_text(
        json.dumps(
            {
                "threshold": 0.97,
                "level": 0.75,
                "precision": 1,
                "recall": 1,
                "f1": 1,
                "n": 10,
                "n_positive": 3,
                "conversion": "none",
            }
        )
    )
    small = pd.read_parquet(repo_root / "data/bbc.parquet").iloc[:60]
    small.to_parquet(tmp_path / "small.parquet")
    res = run_dedup(
        DedupConfig.of(
            corpus=tmp_path / "small.parquet",
            out=tmp_path / "out",
            convert="none",
            calibration=cal,
            cache=False,
            progress=False,
        ),
        encoder=fast_encoder,
    )
    assert res.summary["threshold"] == 0.97
    assert str(cal) in res.summary["threshold_source"]


BAD_INPUTS = {
    "missing-title.csv": "id,headline\n1,a\n",
    "duplicate-id.csv": "id,title\n1,a\n1,b\n",
    "empty-title.csv": "id,title\n1,a\n2,\n",
    "truncated.jsonl": '{"id": "1", "title": "a"}\n{"id": "2", "ti',
    "non-text.jsonl": '{"id": "1", "title": 5}\n',
    "truncated.parquet": None,
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_leaves_previous_report_byte_for_byte(tmp_path, repo_root, fast_encoder, name):
    out = tmp_path / "report"
    good = pd.read_parquet(repo_root / "data/bbc.parquet").iloc[:40]
    good.to_parquet(tmp_path / "good.parquet")
    run_dedup(
        DedupConfig.of(
            corpus=tmp_path / "good.parquet",
            out=out,
            convert="none",
            threshold=0.9,
            cache=False,
            progress=False,
        ),
        encoder=fast_encoder,
    )
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    bad = tmp_path / name
    if BAD_INPUTS[name] is None:
        data = (tmp_path / "good.parquet").read_bytes()
        bad.write_bytes(data[: len(data) // 3])
    else:
        bad.write_text(BAD_INPUTS[name])
    with pytest.raises(InputError) as info:
        run_dedup(
            DedupConfig.of(corpus=bad, out=out, convert="none", threshold=0.9, cache=False, progress=False),
            encoder=fast_encoder,
        )
    assert str(bad) in str(info.value)
    after = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == before


@pytest.mark.slow
def test_rerun_on_unchanged_input_reuses_embeddings(tmp_path, repo_root, fast_encoder, monkeypatch):
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    small = pd.read_parquet(repo_root / "data/bbc.parquet").iloc[:50]
    small.to_parquet(tmp_path / "small.parquet")
    calls = []
    real_encode = fast_encoder.encode

    def counting_encode(texts, *args, **kwargs):
        calls.append(len(texts))
        return real_encode(texts, *args, **kwargs)

    monkeypatch.setattr(fast_encoder, "encode", counting_encode)
    cfg = dict(corpus=tmp_path / "small.parquet", convert="none", threshold=0.9, progress=False)
    first = run_dedup(DedupConfig.of(out=tmp_path / "r1", **cfg), encoder=fast_encoder)
    second = run_dedup(DedupConfig.of(out=tmp_path / "r2", **cfg), encoder=fast_encoder)
    assert calls == [50]
    assert (first.summary["embedding_cache_hit"], second.summary["embedding_cache_hit"]) == (False, True)
    pd.testing.assert_frame_equal(first.pairs, second.pairs)
    small.loc[0, "title"] = "A completely different headline"
    small.to_parquet(tmp_path / "small.parquet")
    third = run_dedup(DedupConfig.of(out=tmp_path / "r3", **cfg), encoder=fast_encoder)
    assert calls == [50, 50] and not third.summary["embedding_cache_hit"]


@pytest.mark.slow
def test_ivf_options_reach_the_index(tmp_path, repo_root, fast_encoder):
    """``--index ivf --nlist --nprobe`` build the index the run searches and saves."""
    import json

    small = pd.read_parquet(repo_root / "data/bbc.parquet").iloc[:400]
    small.to_parquet(tmp_path / "small.parquet")
    cfg = DedupConfig.of(
        corpus=tmp_path / "small.parquet",
        out=tmp_path / "out",
        model="paraphrase-MiniLM-L3-v2",
        convert="none",
        threshold=0.9,
        index_kind="ivf",
        nlist=4,
        nprobe=3,
        cache=False,
        progress=False,
    )
    run_dedup(cfg, encoder=fast_encoder)
    meta = json.loads((tmp_path / "out" / "index" / "meta.json").read_text())
    assert meta["kind"] == "ivf"
    assert meta["params"]["nlist"] == 4 and meta["params"]["nprobe"] == 3
    assert meta["params"]["search"] == "batched"
    with pytest.raises(ConfigError, match="--nprobe must be >= 1"):
        DedupConfig.of(corpus="c.parquet", out="o", nprobe=0)


def test_ivf_lists_and_probes_past_the_vectors_are_said_not_dropped_silently(
    tmp_path, repo_root, fast_encoder, caplog
):
    """``--nlist`` above the vectors there are to train the lists (FAISS's k-means needs one a list) and
    ``--nprobe`` above the lists built fewer than asked, and only FAISS's own k-means warning
    said anything. The run says what it asked and what it got."""
    import logging

    small = pd.read_parquet(repo_root / "data/bbc.parquet").iloc[:40]
    small.to_parquet(tmp_path / "small.parquet")
    cfg = DedupConfig.of(
        corpus=tmp_path / "small.parquet",
        out=tmp_path / "out",
        model="paraphrase-MiniLM-L3-v2",
        convert="none",
        threshold=0.9,
        index_kind="ivf",
        nlist=4096,
        nprobe=1000,
        cache=False,
        progress=False,
    )
    with caplog.at_level(logging.INFO, logger="nlsim"):
        result = run_dedup(cfg, encoder=fast_encoder)
    said = "index: --nlist 4096 is more lists than the 40 vectors that train them: 40 lists"
    assert said in caplog.text
    assert "--nprobe 1000: 40 lists visited (the index has no more)" in caplog.text
    assert result.stats.index.startswith("approximate IVF IP (nlist 40, nprobe 40")


# --- one batch run at a time into a report folder, held from the run's start -----------------------------


HOLDER = """
import sys, time
from nlsim.io.lock import RunLock
lock = RunLock(sys.argv[1], what="report folder").acquire()
print("locked", flush=True)
time.sleep(120)
"""


@contextlib.contextmanager
def _held(out):
    """Another process holding the report folder ``out`` (:data:`HOLDER`) while the block runs; yields it."""
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait()


def _refused_while_held(out, cfg):
    """A run of ``cfg`` into ``out`` while another process holds it: refused at its start, naming the
    holder, before it embeds anything, the holder's lock and the folder's files left as they were."""
    from nlsim.io.lock import LockedError, read_lock

    before = sorted(p.name for p in out.iterdir())
    with _held(out) as holder:
        encoder = _Counting()
        with pytest.raises(
            LockedError, match=rf"report folder {out} is locked by another run: pid {holder.pid}"
        ):
            run_dedup(cfg, encoder=encoder)
        assert type(encoder).calls == 0
        assert read_lock(out).pid == holder.pid  # the holder's lock is untouched
        assert sorted(p.name for p in out.iterdir() if p.name != "lock.json") == before


def _hash_config(tmp_path, out):
    from tests.incremental_helpers import story_corpus

    story_corpus().to_parquet(tmp_path / "all.parquet", index=False)
    return DedupConfig.of(
        corpus=tmp_path / "all.parquet",
        out=out,
        model="hash",
        convert="none",
        threshold=0.7,
        cache=False,
        progress=False,
        save_index=False,
        text_fields=("title",),
    )


class _Counting:
    """A :class:`~tests.incremental_helpers.HashEncoder` that counts its calls."""

    def __new__(cls):
        from tests.incremental_helpers import HashEncoder

        class Counting(HashEncoder):
            calls = 0

            def encode(self, texts, *args, **kw):
                Counting.calls += 1
                return super().encode(texts)

        return Counting()


def test_a_second_batch_run_into_a_held_folder_is_refused_before_any_work(tmp_path):
    """Two overlapping runs into one --out: the second is refused at its start, before it embeds anything
    (not after its work, when the first may be done and the last would win), and the first run's folder is
    left as it was."""
    out = tmp_path / "out"
    cfg = _hash_config(tmp_path, out)
    run_dedup(cfg, encoder=_Counting())
    _refused_while_held(out, cfg)


@pytest.mark.slow
def test_a_daily_run_into_an_out_another_daily_run_holds_is_refused_before_any_work(tmp_path):
    """Two daily runs of two states (two desks) into one --out at once: each swept the other's report as it
    was being written (``sweep_staging`` takes a staging folder beside its own for a killed run's), so one
    failed after its commit on ``runs/.<id>.tmp-...: No such file or directory``, naming neither the other
    run nor the folder. A daily run now holds its --out for the whole run, as a batch run does: the second
    is refused at its start, naming the holder, before its state is touched."""
    from nlsim.io.lock import read_lock

    out = tmp_path / "out"
    first = _hash_config(tmp_path, out).with_(state=str(tmp_path / "desk-a"))
    run_dedup(first, encoder=_Counting())
    _refused_while_held(out, first.with_(state=str(tmp_path / "desk-b")))
    assert not (tmp_path / "desk-b").exists()  # refused before its state was made
    # the holder is gone: its lock is stale, taken over by the next run and released as that run ends
    again = run_dedup(first.with_(state=str(tmp_path / "desk-b")), encoder=_Counting())
    assert again.report_dir == out / "runs" / again.run_id and read_lock(out) is None


@pytest.mark.parametrize("kind", ["new", "empty"])
def test_a_batch_run_that_fails_leaves_no_trace_of_its_hold(tmp_path, kind):
    """A run that fails after its start (a corpus row it refuses) releases the folder it held, and leaves a
    new folder not made, a user's empty folder empty."""
    out = tmp_path / "out"
    if kind == "empty":
        out.mkdir()
    cfg = _hash_config(tmp_path, out)
    pd.DataFrame({"id": ["a", "b"], "title": ["Storm hits the coast", ""]}).to_csv(
        tmp_path / "bad.csv", index=False
    )
    with pytest.raises(InputError, match="row 2"):
        run_dedup(cfg.with_(corpus=str(tmp_path / "bad.csv")), encoder=_Counting())
    assert (list(out.iterdir()) == []) if kind == "empty" else not out.exists()


def _small_model_run(
    tmp_path: Path, corpus: pd.DataFrame, threshold: float, encoder: Any, **options: Any
) -> tuple[DedupConfig, Any]:
    """``corpus`` written to ``news.csv`` and run with the small English model, unconverted, at
    ``threshold`` into ``rep/``: the run's configuration and its result."""
    corpus.to_csv(tmp_path / "news.csv", index=False)
    cfg = DedupConfig.of(
        corpus=tmp_path / "news.csv",
        out=tmp_path / "rep",
        model="paraphrase-MiniLM-L3-v2",
        convert="none",
        threshold=threshold,
        cache=False,
        progress=False,
        **options,
    )
    return cfg, run_dedup(cfg, encoder=encoder)


def test_texts_the_model_reads_as_unknown_tokens_only_pair_with_nothing_but_their_copies(
    tmp_path, fast_encoder
):
    """'😀😀' and '🎉' are one unknown token each to the small model: one vector, a cosine of 1. They stay
    in the report, unpaired but for an exact copy of the same text, and the run says why."""
    titles = {
        "u1": "😀😀",
        "u2": "🎉",
        "u3": "😀😀",  # an exact copy of u1
        "f1": "Floods force thousands from their homes in the north",
        "f2": "Floods force thousands from their homes in the north of the country",
        "m1": "Markets fall on rate fears 🎉",  # readable, with an unknown token
    }
    corpus = pd.DataFrame({"id": list(titles), "title": list(titles.values())})
    _, result = _small_model_run(tmp_path, corpus, 0.8, fast_encoder)
    pairs = {tuple(sorted(p)) for p in zip(result.pairs["id_a"], result.pairs["id_b"], strict=True)}
    assert pairs == {("u1", "u3"), ("f1", "f2")}
    said = [m for m in result.messages if m.startswith("unreadable texts:")]
    assert len(said) == 1 and "2 item(s)" in said[0] and "'u1'" in said[0], result.messages


def test_a_run_says_how_many_texts_run_past_what_the_model_reads(tmp_path, fast_encoder):
    """With ``--text-fields title,body`` a body longer than the model's tokens (256 to the small model, 64
    to a model fine-tuned at its default length) was cut without a word: two articles with one title and
    lead are one vector, whatever their bodies say next. The run says how many texts were cut, and where."""
    lead = "Floods force thousands from their homes in the north. "
    rows = {
        "b1": ("Floods in the north", lead + "Rescue teams worked through the night. " * 60),
        "b2": ("Floods in the north", lead + "The cup final was moved to Sunday. " * 60),
        "s1": ("Markets fall on rate fears", "Shares slid in early trading."),
    }
    corpus = pd.DataFrame(
        {"id": list(rows), "title": [t for t, _ in rows.values()], "body": [b for _, b in rows.values()]}
    )
    cfg, result = _small_model_run(tmp_path, corpus, 0.9, fast_encoder, text_fields=("title", "body"))
    said = [m for m in result.messages if m.startswith("long texts:")]
    assert len(said) == 1, result.messages
    assert "2 item(s)" in said[0] and "'b1'" in said[0] and "256 tokens" in said[0], said
    short = run_dedup(cfg.with_(text_fields=("title",), out=str(tmp_path / "short")), encoder=fast_encoder)
    assert not [m for m in short.messages if m.startswith("long texts:")], short.messages


def test_an_rss_description_in_html_is_embedded_as_a_page_shows_it(tmp_path, fast_encoder):
    """A feed's description is HTML (a picture, paragraphs, a link), another's the plain lead: the model
    read the tags and the picture's address as words, and the two tellings of one story scored 0.68 with
    the small model, far from linked. The texts are embedded as a page shows them."""
    title = "Floods force thousands from homes in northern England"
    lead = "Heavy rain has forced thousands of people to leave their homes across the north of England."
    html = (
        '<p><img src="https://cdn.example.com/images/2024/05/01/floods-north-1234567.jpg" width="640" '
        f'height="360" alt=""/></p><p>{lead}</p>'
        '<p><a href="https://example.com/news/uk-123">Read more</a></p>'
    )
    corpus = pd.DataFrame(
        {
            "id": ["rss", "wire", "other"],
            "title": [title, title, "Storm warning issued for the east coast"],
            "description": [html, lead, "Forecasters warn of high winds across eastern counties."],
        }
    )
    _, result = _small_model_run(tmp_path, corpus, 0.9, fast_encoder)
    pairs = result.pairs.set_index(["id_a", "id_b"])
    assert list(pairs.index) == [("rss", "wire")], result.pairs
    assert pairs["cosine"].iloc[0] > 0.95 and not pairs["exact_copy"].iloc[0]


def test_no_score_of_a_report_is_above_one(tmp_path, fast_encoder):
    """Two texts the model reads alike (one emoji for another, both unknown to it; a copy with its HTML)
    are one vector, whose float32 cosine with itself is 1.0000001 or 1.0000002: pairs.csv and
    pairs.parquet gave that as the similarity and the cosine. Every score is 1 at most."""
    titles = {
        "e1": "Floods hit the north of the country \U0001f600",
        "e2": "Floods hit the north of the country \U0001f389",
        "d1": "<b>Storm</b> warning for the east coast<br/>",
        "d2": "Storm warning for the east coast",
    }
    corpus = pd.DataFrame({"id": list(titles), "title": list(titles.values())})
    _, result = _small_model_run(tmp_path, corpus, 0.9, fast_encoder)
    pairs = pd.read_parquet(tmp_path / "rep" / "pairs.parquet")
    assert sorted(zip(pairs["id_a"], pairs["id_b"], strict=True)) == [("d1", "d2"), ("e1", "e2")], (
        result.pairs
    )
    assert (pairs["similarity"] <= 1).all() and (pairs["cosine"] <= 1).all(), pairs[["similarity", "cosine"]]


@pytest.mark.slow
def test_a_report_written_over_a_chains_report_takes_away_the_chains_record(tmp_path, caplog):
    """nlsim dedup into the folder of an nlsim pipeline report: its pipeline.json and pipeline.md, which name
    the chain's model, decision and judgement, describe a report the folder no longer holds; they go when
    the new report is published, and the run says so. A user's file under another name stays, and so does
    a pipeline.md the chain did not write."""
    import json
    import logging

    from tests.incremental_helpers import HashEncoder

    out = tmp_path / "out"
    cfg = _hash_config(tmp_path, out)
    run_dedup(cfg, encoder=HashEncoder())
    chain = {"decision": {"promoted": True, "current": "v0003-aaaaaaaa"}, "judge": {"f1": 0.9}}
    (out / "pipeline.json").write_text(json.dumps(chain))
    (out / "pipeline.md").write_text("# nlsim pipeline\n\n| candidate v0003-aaaaaaaa | ... |\n")
    (out / "notes.txt").write_text("the desk's notes")
    with caplog.at_level(logging.INFO, logger="nlsim"):
        run_dedup(cfg, encoder=HashEncoder())
    assert not (out / "pipeline.json").exists() and not (out / "pipeline.md").exists()
    assert f"removed {out / 'pipeline.json'}" in caplog.text
    assert (out / "notes.txt").read_text() == "the desk's notes"
    (out / "pipeline.md").write_text("my own page\n")
    run_dedup(cfg, encoder=HashEncoder())
    assert (out / "pipeline.md").read_text() == "my own page\n"


def test_a_dated_quarantine_file_is_the_day_the_run_started_even_past_midnight(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--quarantine bad/{date}.csv`` with an undated ``--corpus`` and no ``--date``: the quarantine file was
    checked under the day the run started and its bad rows written under the day the load ran, a day later
    for a run started just before midnight; the run's date is now taken once, as for ``--corpus``."""
    import datetime as dt

    from nlsim.dedup import run as run_module
    from nlsim.dedup.settings import InputSettings, parse_date

    clock = iter(dt.date(2026, 11, 22) + dt.timedelta(days=i) for i in range(10))  # a day later each time
    monkeypatch.setattr(
        InputSettings, "run_date", lambda self: parse_date(self.date, "--date") if self.date else next(clock)
    )
    written: list[str | None] = []
    monkeypatch.setattr(
        run_module, "run_batch", lambda config, **kw: written.append(config.input.quarantine_path)
    )
    config = DedupConfig.of(
        corpus=str(tmp_path / "news.csv"),
        out=str(tmp_path / "out"),
        quarantine=str(tmp_path / "bad" / "{date}.csv"),
        threshold=0.9,
    )
    run_module.run_dedup(config)
    assert written == [str(tmp_path / "bad" / "2026-11-22.csv")]


def test_a_verdict_that_splits_a_pair_into_two_single_items_is_said_to_change_the_clusters() -> None:
    """An editor's "not the same story" on the two items of a two-item cluster left both alone, and the run
    said "the verdicts changed 0 cluster(s)", as though the verdict had done nothing: the count was of the
    clusters its items are in after the cut, none. The line counts the verdicts that changed the clusters,
    joined and split apart, beside the clusters that hold their items now."""
    from nlsim.dedup.run import _say_editors
    from nlsim.report.record import ClusterChange, EditorsRecord, RunLog

    log = RunLog()
    split = ClusterChange(id_a="n1", id_b="n2", score=0.0, change="split", clusters=[])
    record = EditorsRecord(source="p.tsv.verdicts.csv", verdicts=1, acting=1, cannot_link=1, links_cut=1)
    _say_editors(log, dataclasses.replace(record, cluster_changes=[split]))
    (line,) = log.messages
    assert "changed 0 cluster" not in line
    assert (
        "1 verdict changed the clusters (0 joined, 1 split apart), 0 clusters now holding their items" in line
    )


def _day(items_in: int, skipped: int, held: list[str] | None = None, **more: Any) -> Any:
    """A stand-in for a daily run's window: its counts, the items it holds back, and what else is named."""
    from types import SimpleNamespace

    from nlsim.report.record import Counts

    fields: dict[str, Any] = dict(
        counts=Counts(items_in=items_in, skipped=skipped), held=held or [], switch=None, items=[],
        older_day=False, state=None, day_clock=None, run_id="r2",
    )  # fmt: skip
    return SimpleNamespace(**{**fields, **more})


def test_a_day_is_all_seen_only_with_items_all_in_the_window_and_none_held_back() -> None:
    """An empty day is no day whose items were all seen; nor one with an item that differs from the
    window's copy a later day's run read (held back, not seen the same)."""
    from nlsim.dedup.run import all_seen

    assert all_seen(_day(3, 3))
    assert not all_seen(_day(0, 0))
    assert not all_seen(_day(3, 2))
    assert not all_seen(_day(3, 3, held=["n1"]))


def test_a_day_all_seen_under_another_threshold_is_paired_again_not_embedded_again() -> None:
    from types import SimpleNamespace

    from nlsim.dedup.run import all_seen_line

    paired = all_seen_line(_day(1, 1, switch=SimpleNamespace(reembed=False)), "day.csv")
    assert paired == (
        "the 1 item of day.csv was already in the window with the same text: nothing new to embed; the "
        "window is paired again under the new settings"
    )
    again = all_seen_line(_day(2, 2, switch=SimpleNamespace(reembed=True), items=[0, 1, 2]), "day.csv")
    assert again == (
        "all 2 items of day.csv were already in the window with the same text: none is new, but the whole "
        "window (3 items) is embedded again with the new model"
    )


@pytest.mark.parametrize(("held", "more"), [(10, None), (12, "and 2 more")])
def test_the_items_held_back_are_named_ten_at_most(held: int, more: str | None) -> None:
    """Ten items held back are all named, with no "and 0 more"; twelve: ten named and "and 2 more"."""
    from types import SimpleNamespace

    from nlsim.dedup.run import _say_day
    from nlsim.report.record import RunLog

    log = RunLog()
    ids = [f"n{i}" for i in range(held)]
    settings = SimpleNamespace(input=SimpleNamespace(corpus_path="day.csv"))
    _say_day(log, settings, _day(held, 0, held=ids), corpus=None)  # type: ignore[arg-type]
    (line,) = log.messages
    assert line.startswith(f"{held} item(s) of day.csv differ from the window's copies, which a later day's")
    named = "n0, n1, n2, n3, n4, n5, n6, n7, n8, n9"
    assert f"({named})" in line if more is None else f"({named} {more})" in line
    assert "more" not in line if more is None else True


@pytest.mark.parametrize(
    "last_run", [None, {}, {"run_id": "r1"}, {"run_id": "r1", "timezone": "Asia/Taipei"}]
)
def test_a_run_in_the_zone_of_the_last_or_after_none_that_named_one_is_not_warned(last_run: Any) -> None:
    """No warning of another time zone where the state has no last run, or its record names no zone (an
    older nlsim), or the same one; a warning naming both where the zones differ."""
    from types import SimpleNamespace

    from nlsim.dedup.run import _say_zone
    from nlsim.report.record import RunLog

    settings = SimpleNamespace(input=SimpleNamespace(timezone="Asia/Taipei", corpus_path="day.csv"))
    state = None if last_run is None else SimpleNamespace(last_run=last_run)
    log = RunLog()
    _say_zone(log, settings, _day(1, 0, state=state))  # type: ignore[arg-type]
    assert log.messages == []
    log = RunLog()
    other = SimpleNamespace(input=SimpleNamespace(timezone="UTC", corpus_path="day.csv"))
    _say_zone(
        log, other, _day(1, 0, state=SimpleNamespace(last_run={"run_id": "r1", "timezone": "Asia/Taipei"}))
    )  # type: ignore[arg-type]
    (line,) = log.messages
    assert line.startswith(
        "--timezone UTC is not the time zone of this state's last run (Asia/Taipei, run r1)"
    )


def test_a_kept_table_is_the_same_whatever_the_order_of_its_columns_and_rows() -> None:
    from nlsim.dedup.run import _rows

    kept = pd.DataFrame({"id_a": ["a", "c"], "id_b": ["b", "d"], "score": [1.0, 0.0]})
    again = kept[["score", "id_b", "id_a"]].iloc[::-1]
    assert _rows(kept) == _rows(again) and len(_rows(kept)) == 2
    assert _rows(None) == _rows(kept.iloc[:0]) == set()
    assert _rows(kept) != _rows(kept.assign(score=[1.0, 1.0]))


def test_what_a_record_shows_counts_the_near_misses_and_the_judgement_but_not_the_files_digest() -> None:
    """Another count of near misses or another judgement shows another run; the scored-pair file's
    digest (the input key holds it) and the report and corpus the judgement names do not."""
    from nlsim.dedup.run import _shown
    from nlsim.evaluation.judge import Judgement
    from nlsim.report.record import Counts, RunRecord

    judged = Judgement("p.tsv", "test", 10, 4, 1.0, 0.5, 2 / 3, report="a", corpus="c", pairs_sha256="1")
    record = RunRecord(counts=Counts(items_in=5, quarantined=0, near_misses=3), judge=judged)
    moved = dataclasses.replace(judged, report="b", corpus="d", pairs_sha256="2")
    assert _shown(record) == _shown(dataclasses.replace(record, judge=moved))
    fewer = dataclasses.replace(record.counts, near_misses=2)
    assert _shown(record) != _shown(dataclasses.replace(record, counts=fewer))
    other = dataclasses.replace(judged, recall=0.25)
    assert _shown(record) != _shown(dataclasses.replace(record, judge=other))


def test_the_clusters_a_report_lists_leave_out_the_dissolved_and_the_order_of_members() -> None:
    from nlsim.dedup.run import _listed

    clusters = pd.DataFrame(
        {
            "cluster_id": ["c1", "c2"],
            "status": ["new", "dissolved"],
            "member_ids": [["n2", "n1"], ["n3", "n4"]],
            "representative": ["n1", "n3"],
        }
    )
    assert _listed(clusters) == {("c1", "new", ("n1", "n2"), "n1")}
    reordered = clusters.assign(member_ids=[["n1", "n2"], ["n4", "n3"]])
    assert _listed(reordered) == _listed(clusters)


def test_the_clusters_holding_the_items_of_the_verdicts_are_counted_once_each() -> None:
    """Two verdicts whose items one cluster now holds: one cluster holding their items, not two."""
    from nlsim.dedup.run import _said_changes
    from nlsim.report.record import JOINED, ClusterChange

    changes = [
        ClusterChange(id_a="n1", id_b="n2", score=1.0, change=JOINED, clusters=["c1"]),
        ClusterChange(id_a="n2", id_b="n3", score=1.0, change=JOINED, clusters=["c1"]),
    ]
    said = _said_changes(changes)
    assert (
        said
        == "; 2 verdicts changed the clusters (2 joined, 0 split apart), 1 cluster now holding their items"
    )


def test_a_run_with_no_editors_verdicts_says_nothing_of_them() -> None:
    from nlsim.dedup.run import _say_editors
    from nlsim.report.record import EditorsRecord, RunLog

    log = RunLog()
    _say_editors(log, EditorsRecord(source="p.tsv.verdicts.csv", verdicts=0))
    assert log.messages == []


def test_a_last_run_of_no_id_has_no_missing_report_to_write(tmp_path: Path, monkeypatch) -> None:
    """A state whose last run names no run id (nothing the report folder could be named by) has no report
    to write again, whatever ``OUT/runs/`` holds; a last run of another input whose report folder has no
    ``run.json`` (killed after its commit) has its report written first."""
    from types import SimpleNamespace

    from nlsim.dedup import run as run_module
    from nlsim.dedup import stages
    from nlsim.report.record import RunLog

    written: list[str] = []
    monkeypatch.setattr(stages, "replay_report", lambda report, window, last: written.append(last.run_id))
    settings = SimpleNamespace(report=SimpleNamespace(out=tmp_path))
    daily = SimpleNamespace(folder=tmp_path / "state")
    for run_id in ("", "r1"):
        window = _day(
            1, 0, state=SimpleNamespace(last_run={"run_id": run_id, "input_key": "k1"}), input_key="k2"
        )
        log = RunLog()
        assert run_module._replay_committed(settings, daily, window, log) is None  # type: ignore[arg-type]
        assert log.messages == ([] if not run_id else ["wrote the missing report of the previous run r1"])
    assert written == ["r1"]


def _last_day_again(tmp_path: Path, monkeypatch, *, too_old: tuple[int, int], nprobe: int = 1) -> Any:
    """``_last_run_again`` on a day of three items under another input key, the state's last run (r1)
    having read them all into clusters the run finds again: ``too_old`` is how many of the day's items are
    too old for the window (this run's, the last run's), ``nprobe`` the probes this run searches with (the
    state keeps 1). Its result (the stored report, replayed) or ``None`` (a new run)."""
    from types import SimpleNamespace

    from nlsim.dedup import run as run_module
    from nlsim.dedup import stages
    from nlsim.report.record import Counts, RunLog, RunRecord

    now, before = too_old
    folder = tmp_path / "stored"
    folder.mkdir(parents=True)
    stories = pd.DataFrame({"cluster_id": ["c1"], "member_ids": [["n1", "n2"]], "representative": ["n1"]})
    stories.to_parquet(folder / "window.parquet")
    listed = stories.assign(status="new")
    listed.to_parquet(folder / "clusters.parquet")
    pd.DataFrame({"id_a": ["n1"], "id_b": ["n2"]}).to_parquet(folder / "pairs.parquet")
    last = RunRecord(run_id="r1", counts=Counts(items_in=3, new=3 - before, skipped=0, too_old=before))
    state = SimpleNamespace(
        last_run=last.to_dict(), verdicts=None, scored=None, report_dir=lambda: folder,
        index=SimpleNamespace(kind="ivf", params={"nlist": 2, "nprobe": 1}),
    )  # fmt: skip
    read = ["n1", "n2", "n3"][: 3 - now]
    items = pd.DataFrame({"id": read, "first_seen_run": "r1", "embedded_run": "r1"})
    counts = Counts(items_in=3, skipped=3 - now, too_old=now, expired=0)
    window = _day(
        3, 3 - now, counts=counts, state=state, items=items, n_base=len(items),
        index=SimpleNamespace(kind="ivf", params={"nlist": 2, "nprobe": nprobe}),
    )  # fmt: skip
    clustering = SimpleNamespace(
        window_clusters=stories, report_clusters=listed, report_topics=pd.DataFrame()
    )
    corpus = SimpleNamespace(frame=pd.DataFrame({"id": ["n1", "n2", "n3"]}))
    monkeypatch.setattr(stages, "editors_tables", lambda clustering: (None, None))
    monkeypatch.setattr(
        stages, "replay_report", lambda report, window, last: SimpleNamespace(folder=folder, record=last)
    )
    settings = SimpleNamespace(
        input=SimpleNamespace(corpus_path="day.csv"), report=SimpleNamespace(out=tmp_path)
    )
    record = RunRecord(counts=Counts(items_in=3))
    return run_module._last_run_again(settings, window, clustering, corpus, RunLog(), record)  # type: ignore[arg-type]


def test_the_last_day_again_with_as_many_items_too_old_is_that_run_again(tmp_path: Path, monkeypatch) -> None:
    """Every item of the day read by the last run but one too old for the window, as it was then: the last
    run again (the item too old is no new item)."""
    again = _last_day_again(tmp_path, monkeypatch, too_old=(1, 1))
    assert again is not None and again.replayed and again.run_id == "r1"


@pytest.mark.parametrize(
    ("too_old", "nprobe"),
    [((1, 0), 1), ((0, 0), 4)],
    ids=["an-item-too-old-the-last-run-added", "another-nprobe"],
)
def test_the_last_day_again_with_another_item_too_old_or_index_is_a_new_run(
    tmp_path: Path, monkeypatch, too_old: tuple[int, int], nprobe: int
) -> None:
    """The day's items as many as the last run's, all in the window with the same text, but one of them too
    old for the window where the last run added it (its record would count another item too old), or
    searched with other probes than the state keeps (a new run keeps them): a new run, not the last again."""
    assert _last_day_again(tmp_path, monkeypatch, too_old=too_old, nprobe=nprobe) is None
    assert _last_day_again(tmp_path / "same", monkeypatch, too_old=(too_old[0],) * 2) is not None
