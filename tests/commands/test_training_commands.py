"""The command-line contract: finetune, evaluate (--json), calibrate, learning-curve, annotate."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from stsb_helpers import write_stsb_sample

from nlsim.commands import annotate, calibrate, evaluate, finetune, learning_curve


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="nlsim")
    sub = parser.add_subparsers(dest="command", required=True)
    for mod in (finetune, evaluate, calibrate, learning_curve, annotate):
        mod.register(sub)
    return parser.parse_args(argv)


def cli(argv: list[str]) -> int:
    args = parse(argv)
    return args.func(args)


def test_command_defaults_are_the_config_defaults() -> None:
    """The command lines are made from the configuration dataclasses: their defaults are the configs'."""
    from nlsim.commands.options import config_from_args
    from nlsim.training.config import FinetuneConfig, LearningCurveConfig

    ft = parse(["finetune", "--pairs", "p.tsv", "--out", "model"])
    assert config_from_args(FinetuneConfig, ft) == FinetuneConfig.of(pairs="p.tsv", out="model")
    lc = parse(["learning-curve", "--pairs", "p.tsv", "--out", "curve"])
    assert config_from_args(LearningCurveConfig, lc) == LearningCurveConfig(pairs="p.tsv", out="curve")


@pytest.mark.parametrize(
    ("more", "refusal"),
    [
        (
            ["--no-reranker", "--cross-encoder-epochs", "5"],
            "--cross-encoder-epochs does nothing with --no-reranker",
        ),
        (["--no-reranker", "--story-weight", "2"], "--story-weight does nothing with --no-reranker"),
        (["--no-reranker", "--silver-corpus", "c.tsv", "--cross-encoder-epochs", "2"], None),  # the teacher's
        (["--cross-encoder-epochs", "2"], None),  # the reranker's
    ],
)
def test_cross_encoder_settings_need_a_cross_encoder_to_train(more: list[str], refusal: str | None) -> None:
    """The cross-encoder's training settings act on the reranker, or on the silver pairs' teacher: with
    --no-reranker and no --silver-corpus no cross-encoder trains, and they are refused (the command's
    mistake, nothing done yet) rather than ignored."""
    from nlsim.commands.options import config_from_args
    from nlsim.errors import ConfigError
    from nlsim.training.config import FinetuneConfig

    args = parse(["finetune", "--pairs", "p.tsv", "--out", "model", *more])
    if refusal is None:
        config_from_args(FinetuneConfig, args)
        return
    with pytest.raises(ConfigError) as err:
        config_from_args(FinetuneConfig, args)
    assert str(err.value).startswith(f"{refusal} unless --silver-corpus is given"), err.value


@pytest.fixture(scope="module")
def pairs_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_stsb_sample(tmp_path_factory.mktemp("cli"), train=16, validation=16, test=12)


def test_evaluate_json(pairs_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        cli(
            [
                "evaluate",
                "--model",
                "tfidf-char2",
                "--pairs",
                str(pairs_file),
                "--convert",
                "none",
                "--split",
                "test",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"spearman", "pearson", "mse", "mae", "n"} <= set(out)
    assert out["n"] == 11  # the 12 test rows give one STS-B pair twice, with one score: counted once


@pytest.mark.slow
def test_finetune_then_evaluate_and_calibrate(
    pairs_file: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("NLSIM_HOME", str(tmp_path / "home"))
    model = tmp_path / "model"
    assert (
        cli(
            [
                "finetune",
                "--pairs",
                str(pairs_file),
                "--out",
                str(model),
                "--model",
                "paraphrase-MiniLM-L3-v2",
                "--convert",
                "none",
                "--epochs",
                "1",
                "--seed",
                "3",
                "--batch-size",
                "8",
                "--level",
                "0.6",
            ]
        )
        == 0
    )
    assert (model / "calibration.json").is_file() and (model / "README.md").is_file()
    assert (model / "reranker" / "reranker.json").is_file()  # trained by default
    capsys.readouterr()
    assert (
        cli(["evaluate", "--model", str(model), "--pairs", str(pairs_file), "--convert", "none", "--json"])
        == 0
    )
    got = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    stored = json.loads((model / "training.json").read_text())["metrics"]["reranked/test"]
    assert got["scorer"] == "reranker"
    assert got["spearman"] == pytest.approx(stored["spearman"], abs=0.05)
    # the folder trained on texts as written, read here converted (--convert's default, tw2sp): said
    with caplog.at_level("WARNING", logger="nlsim"):
        assert cli(["evaluate", "--model", str(model), "--pairs", str(pairs_file), "--json"]) == 0
    assert (
        f"--convert tw2sp: {model} (its calibration.json) was calibrated on texts converted with 'none'"
        in caplog.text
    )
    capsys.readouterr()
    cal_file = tmp_path / "zero-shot.json"
    assert (
        cli(
            [
                "calibrate",
                "--model",
                "paraphrase-MiniLM-L3-v2",
                "--pairs",
                str(pairs_file),
                "--level",
                "0.6",
                "--convert",
                "none",
                "--out",
                str(cal_file),
            ]
        )
        == 0
    )
    cal = json.loads(cal_file.read_text())
    assert cal["split"] == "validation" and cal["level"] == 0.6 and cal["n"] == 16
    assert cal["method"] == "cross-validated" and cal["f1_ci95"][0] <= cal["f1"] <= cal["f1_ci95"][1]
    # the quality check of the model's int8/bf16 paths, made on the same pairs and kept for later runs
    from nlsim.encoders import load_encoder
    from nlsim.inference.lossy_verdict import load_quality_check

    record, where = load_quality_check("encoder", load_encoder("paraphrase-MiniLM-L3-v2").fingerprint)
    assert record is not None and where.startswith(str(tmp_path / "home" / "quality-check"))
    assert record["threshold"]["value"] == cal["threshold"] and record["n_pairs"] == 16
    assert "quality check written" in capsys.readouterr().out
    plain = tmp_path / "best-f1.json"
    args = ["calibrate", "--model", "paraphrase-MiniLM-L3-v2", "--pairs", str(pairs_file), "--level", "0.6"]
    assert (
        cli([*args, "--convert", "none", "--method", "best-f1", "--no-precision-check", "--out", str(plain)])
        == 0
    )
    assert json.loads(plain.read_text())["method"] == "best-f1"
    # the fine-tuned folder (trained on texts as written) calibrated on texts converted with tw2sp: said
    caplog.clear()
    again = ["calibrate", "--model", str(model), "--pairs", str(pairs_file), "--level", "0.6"]
    with caplog.at_level("WARNING", logger="nlsim"):
        assert cli([*again, "--no-precision-check", "--out", str(tmp_path / "tw2sp.json")]) == 0
    assert (
        f"--convert tw2sp: {model} (its calibration.json) was calibrated on texts converted with 'none'"
        in caplog.text
    )


def test_evaluate_json_stays_json_when_the_correlation_is_undefined(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Pairs that share no character bigram: TF-IDF scores each of them 0, and Spearman and Pearson are
    undefined. ``--json`` prints ``null`` for them (valid JSON, never ``NaN``), the table ``undefined``,
    and the command says why."""
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(
        "text_a\ttext_b\tscore\tsplit\nabc\txyz\t1.0\ttest\ndef\tuvw\t0.5\ttest\nghi\trst\t0\ttest\n",
        encoding="utf-8",
    )
    argv = ["evaluate", "--model", "tfidf-char2", "--pairs", str(pairs), "--convert", "none"]
    assert cli([*argv, "--json"]) == 0
    out, err = capsys.readouterr()

    def refuse(name: str) -> object:
        raise ValueError(f"not JSON: {name}")

    figures = json.loads(out.strip().splitlines()[-1], parse_constant=refuse)
    assert figures["spearman"] is None and figures["pearson"] is None and figures["n"] == 3
    assert "Spearman and Pearson are undefined" in err
    assert cli(argv) == 0
    table = capsys.readouterr().out
    assert "| undefined | undefined |" in table and "nan" not in table


def test_calibrate_writes_into_the_folder_that_holds_its_pairs(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--out .`` beside the pair file: a folder ``--out`` gets calibration.json only, so the pairs in it
    are never at risk and it is not refused; ``--out`` the pair file itself still is."""
    from nlsim.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "pairs.tsv").write_bytes(pairs_file.read_bytes())
    argv = ["calibrate", "--model", "paraphrase-MiniLM-L3-v2", "--pairs", "pairs.tsv", "--convert", "none"]
    assert cli([*argv, "--no-precision-check", "--out", "."]) == 0
    assert json.loads((tmp_path / "calibration.json").read_text())["split"] == "validation"
    assert "written: calibration.json" in capsys.readouterr().out
    assert (tmp_path / "pairs.tsv").read_bytes() == pairs_file.read_bytes()
    with pytest.raises(ConfigError, match="--out pairs.tsv is the same path as --pairs"):
        cli([*argv, "--no-precision-check", "--out", "pairs.tsv"])


def test_calibrate_never_writes_over_a_saved_models_own_calibration(
    small_reranked_model: Path, pairs_file: Path, tmp_path: Path
) -> None:
    """``--out MODEL/calibration.json`` (or ``--out MODEL`` for another model) would write over a file the
    model folder's manifest lists, and every later use of the model would refuse the folder as altered:
    refused before any work, the folder left as it was. A new file beside it is the user's choice."""
    import shutil

    from nlsim.errors import ConfigError
    from nlsim.io.manifest import check_files, read_manifest

    model = tmp_path / "model"
    shutil.copytree(small_reranked_model, model)
    before = (model / "calibration.json").read_bytes()
    argv = ["calibrate", "--pairs", str(pairs_file), "--convert", "none", "--no-precision-check"]
    with pytest.raises(ConfigError, match="manifest.json lists it"):
        cli([*argv, "--model", str(model), "--out", str(model / "calibration.json")])
    with pytest.raises(ConfigError, match="manifest.json lists it"):
        cli([*argv, "--model", "paraphrase-MiniLM-L3-v2", "--out", str(model)])
    assert (model / "calibration.json").read_bytes() == before
    manifest = read_manifest(model)
    assert manifest is not None
    check_files(model, manifest)  # the model still loads
    assert cli([*argv, "--model", str(model), "--out", str(model / "recalibrated.json")]) == 0


def test_calibrate_out_ending_in_a_slash_is_a_folder_to_make(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--out calibrations/`` names a folder (not there yet): it is made and gets calibration.json, as an
    existing folder does; not a file called ``calibrations``."""
    monkeypatch.chdir(tmp_path)
    argv = ["calibrate", "--model", "paraphrase-MiniLM-L3-v2", "--pairs", str(pairs_file), "--convert"]
    assert cli([*argv, "none", "--no-precision-check", "--out", "calibrations/"]) == 0
    assert (tmp_path / "calibrations").is_dir()
    assert json.loads((tmp_path / "calibrations" / "calibration.json").read_text())["n"] == 16
    assert "written: calibrations/calibration.json" in capsys.readouterr().out


def test_calibrate_records_the_digest_of_the_pairs_it_calibrated_on(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``nlsim calibrate`` read the pair file, loaded the model (minutes, to fetch it), then took the file's
    SHA-256 for the calibration: a file edited meanwhile (a merge adding the day's pairs) was recorded as
    the pairs of a threshold calibrated on the earlier ones. The digest is of the bytes it read."""
    import hashlib
    import shutil

    import nlsim.encoders as encoders

    pairs = tmp_path / "pairs.tsv"
    shutil.copy(pairs_file, pairs)
    read = hashlib.sha256(pairs.read_bytes()).hexdigest()
    real = encoders.load_encoder

    def edited_meanwhile(*args: object, **kwargs: object) -> object:
        header = pairs.read_text(encoding="utf-8").splitlines()[0].split("\t")
        added = {"pair_id": "added", "split": "validation", "text_a": "new one", "text_b": "new two"}
        with pairs.open("a", encoding="utf-8") as out:
            out.write("\t".join(added.get(column, "0.5") for column in header) + "\n")
        return real(*args, **kwargs)

    monkeypatch.setattr(encoders, "load_encoder", edited_meanwhile)
    out = tmp_path / "c.json"
    argv = ["calibrate", "--model", "paraphrase-MiniLM-L3-v2", "--pairs", str(pairs), "--convert", "none"]
    assert cli([*argv, "--no-precision-check", "--out", str(out)]) == 0
    assert hashlib.sha256(pairs.read_bytes()).hexdigest() != read  # the file did change
    cal = json.loads(out.read_text())
    assert (cal["pairs_sha256"], cal["n"]) == (read, 16)


@pytest.mark.parametrize("baseline", ["tfidf-char2", "use-m3"])
def test_calibrate_refuses_a_baseline_by_name(pairs_file: Path, tmp_path: Path, baseline: str) -> None:
    """``nlsim evaluate --model tfidf-char2`` scores a baseline; ``nlsim calibrate`` with it said the name
    "could not be fetched from the Hugging Face hub (offline?)": it is refused as a baseline, nothing
    written."""
    from nlsim.errors import ConfigError

    argv = ["calibrate", "--model", baseline, "--pairs", str(pairs_file), "--out", str(tmp_path / "c.json")]
    with pytest.raises(ConfigError, match=rf"--model {baseline}: a baseline of nlsim evaluate") as info:
        cli(argv)
    assert "hub" not in str(info.value) and not (tmp_path / "c.json").exists()


def test_evaluate_counts_a_pair_pasted_twice_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """One pair in two rows (ids in either order, one score, one split) weighed double in every figure of
    ``nlsim evaluate`` (n 4 for 3 pairs); it is counted once, as training counts it, and said by row."""
    rows = [
        "p1\ta\tb\tstorm hits coast\tstorm hits the coast\t1\ttest",
        "p2\tc\td\tmarket falls\tfootball cup final\t0\ttest",
        "p3\te\tf\tprices rise\tprices rise again\t0.75\ttest",
    ]
    header = "pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore\tsplit\n"
    again = "p4\tb\ta\tstorm hits the coast\tstorm hits coast\t1\ttest"
    once, twice = once_and_twice(tmp_path, header, rows, again)
    figures = [evaluated(path, "none", capsys) for path in (once, twice)]
    assert figures[1] == figures[0] and figures[0]["n"] == 3


def once_and_twice(tmp_path: Path, header: str, rows: list[str], again: str) -> tuple[Path, Path]:
    """Two pair files of ``rows``: ``once.tsv``, and ``twice.tsv`` with the row ``again`` after them."""
    once, twice = tmp_path / "once.tsv", tmp_path / "twice.tsv"
    once.write_text(header + "\n".join(rows) + "\n", encoding="utf-8")
    twice.write_text(header + "\n".join([*rows, again]) + "\n", encoding="utf-8")
    return once, twice


def evaluated(path: Path, convert: str, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    """The figures ``nlsim evaluate --json`` gives of the test pairs of ``path`` with ``tfidf-char2``."""
    argv = ["evaluate", "--model", "tfidf-char2", "--pairs", str(path), "--convert", convert, "--json"]
    assert cli(argv) == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    return {k: out[k] for k in ("spearman", "pearson", "mse", "mae", "n")}


@pytest.mark.parametrize("pairs", ["pairs.tsv", "stsb"])
def test_evaluate_refuses_an_unknown_split_naming_all_too(
    pairs: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``nlsim evaluate --split dev`` said a pair file's splits are train, validation, test, leaving out
    ``all``, which it takes; with ``--pairs stsb`` it blamed the benchmark's 'split' field (exit 1, as a bad
    file). Both now refuse the option, naming ``all`` too."""
    from nlsim.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    write_stsb_sample(tmp_path, 4, 4, 4)
    argv = ["evaluate", "--model", "tfidf-char2", "--pairs", pairs, "--convert", "none", "--split", "dev"]
    with pytest.raises(
        ConfigError, match=r"--split 'dev': unknown split \(give train, validation, test, or all"
    ):
        cli(argv)


def test_calibrate_refuses_an_unknown_split_naming_all_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``nlsim calibrate --split dev`` said a pair file's splits are train, validation, test, leaving out
    ``all``, which it takes as ``nlsim evaluate`` does; it refuses the option as ``nlsim evaluate`` does,
    naming ``all`` too, before any other check."""
    from nlsim.errors import ConfigError

    monkeypatch.chdir(tmp_path)
    argv = ["calibrate", "--model", "m", "--pairs", "pairs.tsv", "--out", "cal.json", "--split", "dev"]
    with pytest.raises(
        ConfigError, match=r"--split 'dev': unknown split \(give train, validation, test, or all"
    ):
        cli(argv)


def test_evaluate_counts_a_pair_given_in_two_scripts_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    """One pair in Traditional characters and again in Simplified ones in one split is one pair to the model,
    which reads both converted to one script (``--convert tw2sp``), as training's check of the splits says:
    ``nlsim evaluate`` counted it twice (n 4 for 3 pairs). It is counted once, the first row kept and the
    row left out named with its conversion; with ``--convert none`` the two rows are two pairs."""
    rows = [
        "p1\t颱風登陸臺灣\t颱風來了\t1\ttest",
        "p2\t股市今天大漲\t足球聯賽開幕\t0\ttest",
        "p3\t北京房價上漲\t北京房價下跌\t0.5\ttest",
    ]
    header = "pair_id\ttext_a\ttext_b\tscore\tsplit\n"
    again = "p4\t台风来了\t台风登陆台湾\t1\ttest"  # row 1's pair in Simplified characters, in either order
    once, twice = once_and_twice(tmp_path, header, rows, again)
    figures, warned = [], []
    for path, convert in ((once, "tw2sp"), (twice, "tw2sp"), (twice, "none")):
        caplog.clear()
        with caplog.at_level("WARNING", logger="nlsim"):
            figures.append(evaluated(path, convert, capsys))
        warned.append(caplog.text)
    assert figures[1] == figures[0] and figures[0]["n"] == 3
    assert figures[2]["n"] == 4
    said = (
        f"{twice}: 1 row(s) repeat the pair of an earlier row in the same split as the model reads them, "
        "converted to one script (--convert tw2sp), and are counted once, the first row kept: row 4 (row 1's "
        "pair)"
    )
    assert [said in text for text in warned] == [False, True, False]
