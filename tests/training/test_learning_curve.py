"""Learning curve: sizes x seeds, summary with mean +/- sd, plot; a finished point is never retrained."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest
from stsb_helpers import write_stsb_sample

import nlsim.training.learning_curve
from nlsim.errors import StateError
from nlsim.training.config import LearningCurveConfig
from nlsim.training.learning_curve import run_learning_curve, summarize


@pytest.fixture(scope="module")
def pairs_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_stsb_sample(tmp_path_factory.mktemp("lc"), train=16, validation=12, test=12)


def config(pairs_file: Path, out: Path, seeds: tuple[int, ...]) -> LearningCurveConfig:
    return LearningCurveConfig(
        pairs=str(pairs_file),
        out=str(out),
        sizes=(8, 16),
        seeds=seeds,
        baselines=("tfidf-char2",),
        model="paraphrase-MiniLM-L3-v2",
        conversion="none",
        epochs=1,
        batch_size=4,
        max_length=48,
        threads=1,
    )


@pytest.mark.slow
def test_curve_then_resume_without_retraining(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "curve"
    first = run_learning_curve(config(pairs_file, out, (1, 2)), log=lambda _: None)
    assert first.trained == 4
    assert first.summary["size"].tolist() == [8, 16]
    assert first.summary["runs"].tolist() == [2, 2]
    assert first.plot_path.read_bytes()[:4] == b"\x89PNG"
    assert "baseline: tfidf-char2" in first.table_md and "±" in first.table_md
    assert sorted(p.name for p in (out / "runs").iterdir()) == [
        "size16_seed1.json",
        "size16_seed2.json",
        "size8_seed1.json",
        "size8_seed2.json",
    ]

    calls: list[tuple[int | None, int]] = []
    real = nlsim.training.learning_curve.finetune

    def counting(cfg, **kw):  # noqa: ANN001, ANN202
        calls.append((cfg.data.train_size, cfg.recipe.seed))
        return real(cfg, **kw)

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", counting)
    again = run_learning_curve(config(pairs_file, out, (1, 2)), log=lambda _: None)
    assert calls == [] and again.trained == 0
    pd.testing.assert_frame_equal(again.summary, first.summary)
    more = run_learning_curve(config(pairs_file, out, (1, 2, 3)), log=lambda _: None)
    assert calls == [(8, 3), (16, 3)] and more.trained == 2
    assert more.summary["runs"].tolist() == [3, 3]


def test_other_settings_in_the_same_folder_are_refused(pairs_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "curve"
    cfg = config(pairs_file, out, (1,))
    cfg.sizes = (8,)
    run_learning_curve(cfg, log=lambda _: None)
    cfg.lr = 1e-3
    with pytest.raises(StateError, match="other settings"):
        run_learning_curve(cfg, log=lambda _: None)


def test_a_curve_whose_pairs_changed_since_is_refused_before_any_work(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Pairs merged into the pair file since the curve's first points (here: one more training pair) would
    make one curve of two data sets: refused by the finished point, before any training or baseline."""
    out, mine = tmp_path / "curve", tmp_path / "pairs.tsv"
    mine.write_bytes(pairs_file.read_bytes())
    cfg = config(mine, out, (1,))
    cfg.sizes = (8,)
    run_learning_curve(cfg, log=lambda _: None)
    table = pd.read_csv(mine, sep="\t", dtype=str, keep_default_na=False)
    extra = table[table["split"] == "train"].iloc[[0]].assign(pair_id="merged-1", text_b="merged since")
    pd.concat([table, extra]).to_csv(mine, sep="\t", index=False)  # as a merge writes it: the same file

    def no_work(*args, **kw):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("trained or scored before the refusal")

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", no_work)
    monkeypatch.setattr(nlsim.training.learning_curve, "get_baseline", no_work)
    with pytest.raises(StateError, match="trained on other pairs than .*pairs.tsv holds now"):
        run_learning_curve(cfg, log=lambda _: None)
    table.to_csv(mine, sep="\t", index=False)  # the same pairs again: the finished point is taken
    assert run_learning_curve(cfg, log=lambda _: None).trained == 0


def test_summary_mean_and_sd() -> None:
    rows = [
        {
            "size": 10,
            "seed": s,
            "test": {"spearman": v, "pearson": 0.0, "mse": 0.1, "mae": 0.2},
            "validation": {"spearman": v},
        }
        for s, v in ((1, 80.0), (2, 82.0), (3, 84.0))
    ]
    summary = summarize(rows)
    assert summary["spearman_mean"].tolist() == [82.0]
    assert summary["spearman_sd"].tolist() == [2.0]


def test_a_size_of_one_run_shows_its_figures_without_a_spread() -> None:
    """One seed measures no spread: the table gives its figures alone, not "± 0.00" (a spread of zero,
    which a reader takes for a curve that no seed moves); two runs give their sd."""
    from nlsim.training.learning_curve import summary_markdown

    def row(size: int, seed: int, v: float) -> dict[str, object]:
        test = {"spearman": v, "pearson": v + 1, "mse": 0.1, "mae": 0.2}
        return {"size": size, "seed": seed, "test": test, "validation": {"spearman": v - 1}}

    summary = summarize([row(10, 1, 80.0), row(20, 1, 84.0), row(20, 2, 86.0)])
    assert summary["spearman_sd"].isna().tolist() == [True, False]  # the CSV's cell is empty, not 0.0
    assert summary.to_csv(index=False).splitlines()[1].startswith("10,1,80.0,,"), summary.to_csv(index=False)
    md = summary_markdown(summary, {})
    assert "| 10 | 1 | 80.00 | 81.00 | 0.1000 | 0.2000 | 79.00 |" in md, md
    assert "| 20 | 2 | 85.00 ± 1.41 | 86.00 ± 1.41 |" in md, md


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"sizes": (8, 8)}, "--sizes 8,8: a value twice"),
        ({"seeds": (1, 1)}, "--seeds 1,1: a value twice"),
        ({"seeds": ()}, "--seeds: give at least one"),
        ({"max_length": 3}, "--max-length must be at least 4"),
        ({"sizes": (3, 8)}, "--sizes: every size must be >= 4 (the fewest pairs a point trains on), got 3"),
    ],
)
def test_settings_that_cannot_make_a_curve_are_refused_up_front(
    pairs_file: Path, tmp_path: Path, change: dict[str, object], words: str
) -> None:
    from dataclasses import replace

    from nlsim.errors import ConfigError

    with pytest.raises(ConfigError, match=re.escape(words)):
        replace(config(pairs_file, tmp_path, (1,)), **change)


def test_a_pair_file_without_a_test_split_is_refused_before_any_point_trains(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nlsim.errors import InputError

    table = pd.read_csv(pairs_file, sep="\t", dtype=str, keep_default_na=False)
    notest = tmp_path / "notest.tsv"
    table[table["split"] != "test"].to_csv(notest, sep="\t", index=False)
    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", lambda *a, **k: pytest.fail("trained"))
    with pytest.raises(InputError, match="no test pairs"):
        run_learning_curve(config(notest, tmp_path / "c", (1,)), log=lambda _: None)


@pytest.mark.parametrize(
    ("drop", "says"),
    [
        ("column", r"no train pairs .*\(no pair names its split: give the file a 'split' column of train"),
        ("validation", r"no validation pairs .*\(the file holds train: 16, test: \d+\)"),
    ],
)
def test_a_pair_file_short_of_a_split_is_refused_saying_what_it_holds(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, drop: str, says: str
) -> None:
    """A pair file without a ``split`` column was refused as having 'no train pairs', which did not say
    that no pair names its split, as ``nlsim finetune`` says; nor did a file without a validation split
    say what splits it holds. The refusal says both, before any work."""
    from nlsim.errors import InputError

    table = pd.read_csv(pairs_file, sep="\t", dtype=str, keep_default_na=False)
    table = table.drop(columns=["split"]) if drop == "column" else table[table["split"] != drop]
    short = tmp_path / "short.tsv"
    table.to_csv(short, sep="\t", index=False)
    _no_work(monkeypatch)
    with pytest.raises(InputError, match=says):
        run_learning_curve(config(short, tmp_path / "c", (1,)), log=lambda _: None)
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("typed", ["mine", "mine/new/../../mine"])
def test_a_folder_of_the_users_is_refused_before_any_work(
    pairs_file: Path, tmp_path: Path, typed: str
) -> None:
    """``--out`` takes runs/, baselines.json and the table and plot: a folder nlsim did not write (one
    holding the user's own learning_curve.md) is refused by name, and nothing in it changes."""
    from nlsim.errors import ConfigError

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "learning_curve.md").write_text("my own notes\n")
    with pytest.raises(ConfigError, match=r"not empty and was not written by nlsim"):
        run_learning_curve(config(pairs_file, tmp_path / typed, seeds=(0,)), log=lambda _: None)
    assert [p.name for p in mine.iterdir()] == ["learning_curve.md"]
    assert (mine / "learning_curve.md").read_text() == "my own notes\n"


def test_a_curve_trains_the_epochs_asked_on_a_cpu_without_bf16(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fine-tuning takes its fp32 recipe (1 epoch) on such a CPU; a curve is a measurement, so its points
    train the epochs it was asked for and its summary names, on every CPU."""
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx avx2 fma")
    cfg = config(pairs_file, tmp_path / "lc", seeds=(1,))
    cfg.epochs = 3
    assert cfg.finetune_config(8, 1).for_device("cpu").bi_encoder.epochs == 3


def test_a_curve_trains_the_batch_size_and_learning_rate_asked_on_a_gpu(
    pairs_file: Path, tmp_path: Path
) -> None:
    """Fine-tuning on a GPU takes --gpu-batch-size (32) with its learning rate scaled up; a curve's points
    train the batch size and learning rate it asked for, which its table names, on every device (a curve
    resumed on a GPU would otherwise mix points of two recipes under one settings key)."""
    cfg = config(pairs_file, tmp_path / "lc", seeds=(1,))
    used = cfg.finetune_config(8, 1).for_device("cuda:0")
    assert (used.recipe.batch_size, used.bi_encoder.lr) == (cfg.batch_size, cfg.lr)


@pytest.mark.slow
def test_a_curve_trains_on_an_editors_newer_score_of_an_overruled_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A training pair an editor overruled (``nlsim annotate merge --overrule``) is read with the editor's
    score, as ``nlsim finetune`` reads it, and the curve says how many it read so."""
    from nlsim.annotation.merge import merge_annotations

    titles = {f"n{i}": f"Headline number {i} of the day" for i in range(20)}
    rows = [("n0", "n1", "0.75", "train"), ("n2", "n3", "0.5", "train"), ("n4", "n5", "1", "validation")]
    rows += [("n8", "n9", "0.25", "train"), ("n10", "n11", "1", "train")]
    rows += [("n12", "n13", "0", "validation"), ("n14", "n15", "0.5", "validation")]
    rows += [("n6", "n7", "0", "test"), ("n16", "n17", "1", "test"), ("n18", "n19", "0.5", "test")]
    pairs = tmp_path / "news.tsv"
    lines = ["pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore\tsplit"]
    lines += [f"p{i}\t{a}\t{b}\t{titles[a]}\t{titles[b]}\t{s}\t{sp}" for i, (a, b, s, sp) in enumerate(rows)]
    pairs.write_text("\n".join(lines) + "\n", encoding="utf-8")
    filled = tmp_path / "marks.csv"
    pd.DataFrame(
        {"id_a": ["n0"], "id_b": ["n1"], "text_a": [titles["n0"]], "text_b": [titles["n1"]], "score": ["0"]}
    ).to_csv(filled, index=False)
    merge_annotations(filled, pairs, overrule=True, log=lambda _: None)
    trained_on: list[pd.DataFrame] = []

    class Stop(Exception):
        pass

    def capture(cfg, *, pairs, log):  # noqa: ANN001, ANN202
        trained_on.append(pairs)
        raise Stop

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", capture)
    cfg = LearningCurveConfig(
        pairs=str(pairs), out=str(tmp_path / "curve"), sizes=(4,), seeds=(1,), baselines=()
    )
    said: list[str] = []
    with pytest.raises(Stop):
        run_learning_curve(cfg, log=said.append)
    train = trained_on[0][trained_on[0]["split"] == "train"]
    read = dict(zip(train["id_a"], train["score"].astype(float), strict=True))
    assert read == {"n0": 0.0, "n2": 0.5, "n8": 0.25, "n10": 1.0}
    assert any("1 training pair(s) read with an editor's newer score" in line for line in said), said


def test_a_baseline_is_scored_again_when_the_test_pairs_changed(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nlsim.io.pairs import load_pairs
    from nlsim.training.learning_curve import run_baselines

    cfg = config(pairs_file, tmp_path, (1,))
    pairs = load_pairs(pairs_file)
    scored: list[str] = []
    real = nlsim.training.learning_curve.get_baseline

    def counting(name: str):  # noqa: ANN202
        scored.append(name)
        return real(name)

    monkeypatch.setattr(nlsim.training.learning_curve, "get_baseline", counting)
    first = run_baselines(cfg, pairs, log=lambda _: None)
    assert run_baselines(cfg, pairs, log=lambda _: None) == first and scored == ["tfidf-char2"]
    test = pairs["split"] == "test"
    changed = pairs.assign(score=pairs["score"].where(~test, 1.0 - pairs["score"]))  # other test pairs
    again = run_baselines(cfg, changed, log=lambda _: None)
    assert scored == ["tfidf-char2", "tfidf-char2"] and again != first


def test_a_baseline_counts_a_test_pair_given_in_two_scripts_once_as_the_points_do(tmp_path: Path) -> None:
    """A test pair in Traditional characters and again in Simplified ones (one score) is one pair to the
    model (``--convert tw2sp``): each point, trained through ``nlsim finetune``'s reading, scores it once,
    as ``nlsim evaluate`` does, but the curve's baselines scored both rows, so the curve set figures of
    two test sets side by side. The baselines score the points' test pairs."""
    from nlsim.errors import InputError
    from nlsim.training.data import prepare_pairs
    from nlsim.training.learning_curve import check_curve_splits, load_curve_pairs, run_baselines

    rows = [
        ("股市今天大漲", "股市今日大漲三成", "1", "train"),
        ("足球聯賽開幕", "足球聯賽閉幕", "0.25", "train"),
        ("北京房價上漲", "上海房價下跌", "0.25", "train"),
        ("公務員考試報名", "公務員考試成績", "0.5", "train"),
        ("新手機發佈", "手機價格下調", "0", "train"),
        ("籃球比賽結果", "足球聯賽開幕", "0", "validation"),
        ("股市明天大跌", "股市今天大漲", "0.5", "validation"),
        ("颱風來了", "颱風登陸臺灣", "1", "validation"),
        ("颱風來了", "股市明天大跌", "0", "validation"),
        ("電影票房創新高", "公務員考試報名", "0", "test"),
        ("颱風消息", "颱風來襲", "1", "test"),
        ("台风来袭", "台风消息", "1", "test"),  # row 11's pair in Simplified characters, in either order
        ("股市今日大涨", "足球聯賽閉幕", "0.5", "test"),
    ]
    path = tmp_path / "pairs.tsv"
    pd.DataFrame(rows, columns=["text_a", "text_b", "score", "split"]).to_csv(path, sep="\t", index=False)
    cfg = dataclasses.replace(config(path, tmp_path / "curve", (1,)), conversion="tw2sp", sizes=(4,))
    pairs = load_curve_pairs(path, log=lambda _: None)
    (scored,) = run_baselines(cfg, pairs, log=lambda _: None).values()
    point = prepare_pairs(cfg.finetune_config(4, 1), pairs)
    assert scored["n"] == len(point.test) == 3
    fewer = tmp_path / "fewer.tsv"  # three test rows, two test pairs to the model: too few to score a point
    pd.DataFrame(rows[:-1], columns=["text_a", "text_b", "score", "split"]).to_csv(
        fewer, sep="\t", index=False
    )
    with pytest.raises(InputError, match=r"fewer\.tsv: field 'split': 2 pair\(s\) in split 'test'"):
        check_curve_splits(
            load_curve_pairs(fewer, log=lambda _: None), dataclasses.replace(cfg, pairs=str(fewer))
        )


def test_a_validation_split_too_small_as_the_model_reads_it_is_refused_before_the_first_point(
    tmp_path: Path,
) -> None:
    """Three validation rows, two of them one pair to the model (in Traditional characters and again in
    Simplified ones): each point reads two validation pairs, which ``nlsim finetune`` refuses (at least 3
    are needed), but the curve's check before any work counted three rows and let the curve score its
    baselines and start. It checks the splits as the points read them, and refuses the file first."""
    from nlsim.errors import InputError
    from nlsim.training.learning_curve import check_curve_splits, load_curve_pairs

    rows = [
        ("股市今天大漲", "股市今日大漲三成", "1", "train"),
        ("足球聯賽開幕", "足球聯賽閉幕", "0.25", "train"),
        ("北京房價上漲", "上海房價下跌", "0.25", "train"),
        ("公務員考試報名", "公務員考試成績", "0.5", "train"),
        ("新手機發佈", "手機價格下調", "0", "train"),
        ("籃球比賽結果", "足球聯賽開幕", "0", "validation"),
        ("颱風來了", "颱風登陸臺灣", "1", "validation"),
        ("台风登陆台湾", "台风来了", "1", "validation"),  # row 7's pair in Simplified characters
        ("電影票房創新高", "公務員考試報名", "0", "test"),
        ("颱風消息", "颱風來襲", "1", "test"),
        ("股市今日大涨", "足球聯賽閉幕", "0.5", "test"),
    ]
    path = tmp_path / "pairs.tsv"
    pd.DataFrame(rows, columns=["text_a", "text_b", "score", "split"]).to_csv(path, sep="\t", index=False)
    cfg = dataclasses.replace(config(path, tmp_path / "curve", (1,)), conversion="tw2sp", sizes=(4,))
    with pytest.raises(InputError, match=r"field 'split': the validation split has 2 pair\(s\); at least 3"):
        check_curve_splits(load_curve_pairs(path, log=lambda _: None), cfg)
    check_curve_splits(
        load_curve_pairs(path, log=lambda _: None), dataclasses.replace(cfg, conversion="none")
    )


def test_the_zero_shot_baseline_is_scored_again_at_another_max_length(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The zero-shot encoder's figures depend on the length it embeds at: a curve resumed in its folder with
    another ``--max-length`` scores it again, and its table shows the figure of the length asked, not the
    one stored first. A resume at the length stored scores nothing."""
    from dataclasses import replace

    from nlsim.io.pairs import load_pairs
    from nlsim.training.learning_curve import run_baselines

    cfg = replace(config(pairs_file, tmp_path, (1,)), baselines=("zero-shot",), max_length=64)
    pairs = load_pairs(pairs_file)
    lengths: list[int] = []

    class Scorer:
        max_length = 0

    def fake_load(name: str, **kw: object) -> Scorer:
        return Scorer()

    def fake_evaluate(scorer: Scorer, test: pd.DataFrame, conversion: str) -> object:
        lengths.append(scorer.max_length)
        figures = {"spearman": float(scorer.max_length), "pearson": 1.0, "mse": 0.1, "mae": 0.2, "n": 12}
        return SimpleNamespace(as_dict=lambda: figures)

    monkeypatch.setattr(nlsim.training.learning_curve, "load_encoder", fake_load)
    monkeypatch.setattr(nlsim.training.learning_curve, "evaluate", fake_evaluate)
    first = run_baselines(cfg, pairs, log=lambda _: None)
    assert [b["spearman"] for b in first.values()] == [64.0]
    longer = run_baselines(replace(cfg, max_length=128), pairs, log=lambda _: None)
    assert lengths == [64, 128] and [b["spearman"] for b in longer.values()] == [128.0]
    assert run_baselines(cfg, pairs, log=lambda _: None) == first and lengths == [64, 128]


def _no_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make training a point or scoring a baseline fail the test: a refusal must come before either."""

    def no_work(*args, **kw):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("trained or scored before the refusal")

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", no_work)
    monkeypatch.setattr(nlsim.training.learning_curve, "get_baseline", no_work)
    monkeypatch.setattr(nlsim.training.learning_curve, "load_encoder", no_work)


def _with_scores(pairs_file: Path, folder: Path, split: str, scores: list[float]) -> Path:
    """The sample pair file with the scores of ``split`` replaced by ``scores`` (cycled)."""
    table = pd.read_csv(pairs_file, sep="\t", dtype=str, keep_default_na=False)
    rows = table.index[table["split"] == split]
    table.loc[rows, "score"] = [str(scores[i % len(scores)]) for i in range(len(rows))]
    path = folder / f"{split}_scores.tsv"
    table.to_csv(path, sep="\t", index=False)
    return path


def test_a_test_split_of_one_score_is_refused_before_any_work(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every point is scored on test: with one score there, each point's Spearman would be NaN, the curve
    trained for nothing. Refused by the pair file's name before a baseline or a point, and no --out made."""
    from nlsim.errors import InputError

    flat = _with_scores(pairs_file, tmp_path, "test", [0.6])
    _no_work(monkeypatch)
    cfg = config(flat, tmp_path / "curve", (1,))
    with pytest.raises(  # 12 rows: STS-B gives one of them twice, and with one score it counts once
        InputError,
        match=r"test_scores\.tsv: field 'score': the 11 pair\(s\) in split 'test' all have the score",
    ):
        run_learning_curve(cfg, log=lambda _: None)
    assert not (tmp_path / "curve").exists()


def test_a_validation_split_of_one_score_is_refused_before_the_baselines(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each point keeps its best epoch on validation: one score there is what ``nlsim finetune`` refuses;
    the curve refuses it before the baselines are scored, not at its first point."""
    from nlsim.errors import InputError

    flat = _with_scores(pairs_file, tmp_path, "validation", [0.4])
    _no_work(monkeypatch)
    with pytest.raises(
        InputError, match=r"validation_scores\.tsv: field 'score': every validation pair has the score 0\.4"
    ):
        run_learning_curve(config(flat, tmp_path / "curve", (1,)), log=lambda _: None)
    assert not (tmp_path / "curve").exists()


def test_a_later_point_drawing_pairs_of_one_score_is_refused_before_the_first_trains(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small size can draw training pairs that all have one score (nothing to learn): the curve says
    which point, before the first point trains, rather than failing there hours later."""
    import numpy as np

    from nlsim.errors import ConfigError

    mostly = _with_scores(pairs_file, tmp_path, "train", [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    seed = next(
        s for s in range(1000) if all(i % 8 != 7 for i in np.random.default_rng(s).permutation(16)[:4])
    )
    _no_work(monkeypatch)
    cfg = config(mostly, tmp_path / "curve", (seed,))
    cfg.sizes = (16, 4)
    with pytest.raises(ConfigError, match=rf"--sizes 4 with seed {seed}: the 4 training pairs drawn from"):
        run_learning_curve(cfg, log=lambda _: None)
    assert not (tmp_path / "curve").exists()


def _finetuned(cfg, *, pairs, log):  # noqa: ANN001, ANN202
    """A point's fine-tuning as the curve reads its result, without training (for the tests of resuming)."""
    from types import SimpleNamespace

    test = {"spearman": 40.0, "pearson": 41.0, "mse": 0.1, "mae": 0.2, "n": 12}
    best = {"spearman": 50.0, "epoch": 1, "step": 2}
    return SimpleNamespace(best=best, metrics={"after/test": test}, seconds=1.0, seconds_per_epoch=[1.0])


def test_the_same_pair_file_named_another_way_resumes_the_curve(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A curve started with ``--pairs pairs.tsv`` and resumed with the file's absolute path (a scheduled
    job, another working folder) is one curve on the same pairs: its finished points are taken, not refused
    as made with other settings (the pairs are compared by what they hold)."""
    import json
    from dataclasses import replace

    monkeypatch.chdir(pairs_file.parent)
    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)
    cfg = replace(config(Path(pairs_file.name), tmp_path / "curve", (1,)), baselines=())
    assert run_learning_curve(cfg, log=lambda _: None).trained == 2
    _no_work(monkeypatch)
    again = replace(cfg, pairs=str(pairs_file.resolve()))
    assert run_learning_curve(again, log=lambda _: None).trained == 0
    point = tmp_path / "curve" / "runs" / "size8_seed1.json"  # written before: the name in its settings
    done = json.loads(point.read_text(encoding="utf-8"))
    point.write_text(json.dumps({**done, "settings": cfg.settings_key(with_pairs=True)}), encoding="utf-8")
    assert run_learning_curve(cfg, log=lambda _: None).trained == 0


def test_new_sizes_with_other_settings_in_a_curves_folder_are_refused_before_any_work(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A folder is one curve: a size it has no point of yet, asked with another learning rate, would train
    beside points made with the first one (and take their baselines); refused before any work, as a
    finished point of that size would be, and the curve's points left as they were."""
    from dataclasses import replace

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)
    cfg = replace(config(pairs_file, tmp_path / "curve", (1,)), sizes=(8,), baselines=())
    run_learning_curve(cfg, log=lambda _: None)
    before = sorted(p.name for p in (tmp_path / "curve" / "runs").iterdir())
    _no_work(monkeypatch)
    with pytest.raises(StateError, match=r"size8_seed1\.json: made with other settings"):
        run_learning_curve(replace(cfg, sizes=(16,), lr=1e-3), log=lambda _: None)
    assert sorted(p.name for p in (tmp_path / "curve" / "runs").iterdir()) == before
    assert run_learning_curve(replace(cfg, sizes=(8,)), log=lambda _: None).trained == 0


def test_a_users_folder_holding_a_learning_curve_csv_of_their_own_is_refused(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A curve written before folders were marked is known by its table or its points as nlsim writes them,
    not by a file's name: a user's own ``learning_curve.csv`` (the table nlsim would overwrite) does not
    make their folder a curve's; refused before any work, their files as they were."""
    from nlsim.errors import ConfigError
    from nlsim.io.ownership import is_owned

    mine = tmp_path / "analysis"
    mine.mkdir()
    (mine / "learning_curve.csv").write_text("model,pairs,score\nours,350,0.71\n", encoding="utf-8")
    (mine / "notes.md").write_text("my notes\n", encoding="utf-8")
    _no_work(monkeypatch)
    with pytest.raises(ConfigError, match="not empty and was not written by nlsim"):
        run_learning_curve(config(pairs_file, mine, (1,)), log=lambda _: None)
    assert sorted(p.name for p in mine.iterdir()) == ["learning_curve.csv", "notes.md"]
    assert (mine / "learning_curve.csv").read_text(encoding="utf-8") == "model,pairs,score\nours,350,0.71\n"
    old = tmp_path / "old-curve"  # one nlsim wrote before markers is still its own
    (old / "runs").mkdir(parents=True)
    point = {"size": 8, "seed": 1, "test": {"spearman": 40.0}, "validation": {"spearman": 41.0}}
    (old / "runs" / "size8_seed1.json").write_text(json.dumps(point), encoding="utf-8")
    assert is_owned(old, "learning-curve")
    (old / "runs" / "size8_seed1.json").unlink()
    (old / "learning_curve.csv").write_text(
        "size,runs,spearman_mean,spearman_sd,pearson_mean\n8,1,40.0,0.0,41\n"
    )
    assert is_owned(old, "learning-curve")


@pytest.mark.parametrize("damaged", ["[1, 2]", "40.5", '"done"'])
def test_a_point_file_holding_other_json_is_refused_by_name(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damaged: str
) -> None:
    """A finished point whose file holds valid JSON that is no point record (a list, a number: edited or
    overwritten by another tool) is refused naming the file, as an unreadable one is, not with a traceback;
    nothing is trained or scored first."""
    from nlsim.io.ownership import write_marker

    point = tmp_path / "curve" / "runs" / "size8_seed1.json"
    point.parent.mkdir(parents=True)
    write_marker(tmp_path / "curve", "learning-curve")  # a curve's folder
    point.write_text(damaged, encoding="utf-8")
    _no_work(monkeypatch)
    with pytest.raises(StateError, match=r"size8_seed1\.json: not a record nlsim wrote"):
        run_learning_curve(config(pairs_file, tmp_path / "curve", (1,)), log=lambda _: None)
    assert point.read_text(encoding="utf-8") == damaged


def test_a_curve_whose_pair_file_was_resorted_since_is_refused_before_any_work(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each seed draws its sizes by position from the training pairs as the file holds them: the same pairs
    re-sorted (a spreadsheet's sort, saved) are other subsets for the sizes still to train, one curve of
    two draws beside the finished points. Refused by the finished point before any work, though the pairs
    are the same; in their first order again, the curve resumes."""
    from dataclasses import replace

    mine = tmp_path / "pairs.tsv"
    mine.write_bytes(pairs_file.read_bytes())
    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)
    cfg = replace(config(mine, tmp_path / "curve", (1,)), sizes=(8,), baselines=())
    run_learning_curve(cfg, log=lambda _: None)
    table = pd.read_csv(mine, sep="\t", dtype=str, keep_default_na=False)
    table.sort_values(["split", "text_a"]).to_csv(mine, sep="\t", index=False)
    _no_work(monkeypatch)
    resorted = r"size8_seed1\.json: drawn from the training pairs of .*pairs\.tsv in another order"
    with pytest.raises(StateError, match=resorted):
        run_learning_curve(replace(cfg, sizes=(8, 16)), log=lambda _: None)
    assert sorted(p.name for p in (tmp_path / "curve" / "runs").iterdir()) == ["size8_seed1.json"]
    table.to_csv(mine, sep="\t", index=False)
    assert run_learning_curve(cfg, log=lambda _: None).trained == 0


HOLDER = """
import sys, time
from nlsim.io.lock import RunLock
lock = RunLock(sys.argv[1]).acquire()
print("locked", flush=True)
time.sleep(120)
"""


def test_a_second_curve_into_a_folder_a_running_curve_holds_is_refused_before_any_work(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two curves at once into one --out (the flow started while the command runs) each checked the
    folder's points before the other wrote any, then trained beside each other, into the same point files:
    with another learning rate, the folder held points of two settings and a table of the rows of the one
    that ended last. The second is now refused at its start, naming the run that holds the folder, before a
    baseline or a point; and a curve killed while it held the folder is resumed."""
    import subprocess
    import sys
    from dataclasses import replace

    from nlsim.io.lock import LockedError, read_lock

    out = tmp_path / "curve"
    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)
    cfg = replace(config(pairs_file, out, (1,)), sizes=(8,), baselines=())
    run_learning_curve(cfg, log=lambda _: None)
    before = sorted(p.name for p in (out / "runs").iterdir())
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        _no_work(monkeypatch)
        with pytest.raises(LockedError, match=rf"{out} is locked by another run: pid {holder.pid}"):
            run_learning_curve(replace(cfg, seeds=(1, 2)), log=lambda _: None)
        assert read_lock(out).pid == holder.pid  # the holder's lock is untouched
        assert sorted(p.name for p in (out / "runs").iterdir()) == before
    finally:
        holder.kill()
        holder.wait()
    said: list[str] = []
    assert run_learning_curve(cfg, log=said.append).trained == 0
    assert any(f"took over a stale lock on {out}" in line for line in said), said
    assert read_lock(out) is None


def test_a_curve_resumed_with_other_settings_is_refused_naming_each_one_that_differs(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refusal saying only "made with other settings" left the user to guess which of nine: it names each
    setting the finished point was made with and the one asked now, by its flag; a point that recorded only
    its settings' hash (written before) is still refused, without the list."""
    from dataclasses import replace

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)
    cfg = replace(config(pairs_file, tmp_path / "curve", (1,)), sizes=(8,), baselines=())
    run_learning_curve(cfg, log=lambda _: None)
    _no_work(monkeypatch)
    other = replace(cfg, lr=1e-3, epochs=2, freeze_embeddings=False)
    with pytest.raises(StateError) as refused:
        run_learning_curve(other, log=lambda _: None)
    assert str(refused.value).startswith(
        f"{tmp_path / 'curve' / 'runs' / 'size8_seed1.json'}: made with other settings (--epochs 1 there, 2 "
        "now; --lr 0.0001 there, 0.001 now; --unfreeze-embeddings not given there, given now); use another"
    )
    point = tmp_path / "curve" / "runs" / "size8_seed1.json"
    done = json.loads(point.read_text(encoding="utf-8"))
    point.write_text(json.dumps({k: v for k, v in done.items() if k != "parameters"}), encoding="utf-8")
    with pytest.raises(StateError, match=r"size8_seed1\.json: made with other settings; use another"):
        run_learning_curve(other, log=lambda _: None)


def test_a_users_folder_holding_a_copy_of_a_curves_table_beside_their_own_files_is_refused(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A curve written before folders were marked holds only what a curve writes; a user's folder holding a
    copy of a curve's table (nlsim's own header) or of a point beside their own files was taken for one,
    and the copied table, plot and notes' neighbours overwritten. Refused now before any work, every file as
    it was; a folder of a curve's files alone is still the curve's."""
    from nlsim.errors import ConfigError
    from nlsim.io.ownership import is_owned

    mine = tmp_path / "analysis"
    (mine / "runs").mkdir(parents=True)
    table = "size,runs,spearman_mean,spearman_sd,pearson_mean\n8,1,40.0,,41\n"
    (mine / "learning_curve.csv").write_text(table, encoding="utf-8")  # copied from an older curve
    (mine / "thesis.docx").write_bytes(b"my draft")
    _no_work(monkeypatch)
    with pytest.raises(ConfigError, match=r"not empty and was not written by nlsim .* thesis\.docx"):
        run_learning_curve(config(pairs_file, mine, (1,)), log=lambda _: None)
    assert sorted(p.name for p in mine.iterdir()) == ["learning_curve.csv", "runs", "thesis.docx"]
    assert (mine / "learning_curve.csv").read_text(encoding="utf-8") == table
    (mine / "learning_curve.csv").unlink()
    point = {"size": 8, "seed": 1, "test": {"spearman": 40.0}, "validation": {"spearman": 41.0}}
    (mine / "runs" / "size8_seed1.json").write_text(json.dumps(point), encoding="utf-8")
    assert not is_owned(mine, "learning-curve")
    (mine / "thesis.docx").unlink()
    (mine / ".DS_Store").write_bytes(b"")  # what a file browser leaves is no file of the user's
    assert is_owned(mine, "learning-curve")


def test_the_summary_is_the_same_whatever_the_order_its_seeds_ran_in(tmp_path: Path) -> None:
    """A curve resumed with ``--seeds 3,2,1`` after ``--seeds 1,2,3`` (or the flow given them so) has the same
    points; its CSV gave other figures in their last digits, the sums taken in the seeds' order, and its
    Markdown table's heading the seeds in the order given."""
    from nlsim.training.learning_curve import summary_markdown, write_summary

    rows = [
        {
            "size": 10,
            "seed": s,
            "test": {"spearman": v, "pearson": v, "mse": v / 100, "mae": v / 10},
            "validation": {"spearman": v},
        }
        for s, v in ((1, 0.1), (2, 0.2), (3, 0.3))
    ]
    forward, backward = summarize(rows), summarize(rows[::-1])
    assert forward.to_csv(index=False) == backward.to_csv(index=False)
    assert summary_markdown(forward, {}) == summary_markdown(backward, {})
    for name, seeds, ran in (("forward", (1, 2, 3), rows), ("backward", (3, 2, 1), rows[::-1])):
        cfg = LearningCurveConfig(pairs="pairs.tsv", out=str(tmp_path / name), sizes=(10,), seeds=seeds)
        write_summary(cfg, ran, {})
    for table in ("learning_curve.md", "learning_curve.csv"):
        assert (tmp_path / "forward" / table).read_bytes() == (tmp_path / "backward" / table).read_bytes()


def test_the_plot_marks_whole_numbers_of_training_pairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small curve (sizes 4 and 8) was plotted against 4.5, 5.0, 5.5 ... training pairs: its axis now marks
    whole numbers only, with the baselines as lines across it."""
    import matplotlib.pyplot as plt

    from nlsim.training.learning_curve import plot

    figures: list[object] = []
    monkeypatch.setattr(plt, "close", figures.append)  # the figure, kept to read its axis
    rows = [
        {"size": n, "seed": s, "test": {"spearman": v, "pearson": v, "mse": 0.1, "mae": 0.2}}
        | {"validation": {"spearman": v}}
        for n, s, v in ((4, 1, 80.0), (4, 2, 81.0), (8, 1, 84.0), (8, 2, 86.0))
    ]
    baseline = {"name": "tfidf-char2", "spearman": 70.0, "pearson": 70.0, "mse": 0.1, "mae": 0.2}
    path = plot(summarize(rows), {"tfidf-char2/none": baseline}, tmp_path / "curve.png")
    assert path.read_bytes()[:4] == b"\x89PNG"
    (ax,) = figures[0].axes
    ticks = [t for t in ax.get_xticks() if ax.get_xlim()[0] <= t <= ax.get_xlim()[1]]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
    assert [line.get_ydata()[0] for line in ax.get_lines() if line.get_linestyle() == "--"] == [70.0]


def test_a_curve_from_before_markers_that_a_kill_left_a_temporary_file_in_resumes(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A curve written before folders were marked, killed while it wrote its table, holds its points and
    the table's temporary file (``.learning_curve.csv.XXXXXXXX.tmp.csv``): that file was taken for one of the
    user's, and the curve refused as "not written by nlsim". It resumes, its finished point not retrained; a
    user's own hidden file still makes the folder theirs."""
    from dataclasses import replace

    from nlsim.io.ownership import MARKER, is_owned

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)
    out = tmp_path / "curve"
    cfg = replace(config(pairs_file, out, (1,)), sizes=(8,), baselines=())
    run_learning_curve(cfg, log=lambda _: None)
    (out / MARKER).unlink()  # as written before markers: its points, table and plot
    for point in (out / "runs").glob("*.json"):
        done = json.loads(point.read_text(encoding="utf-8"))
        old = {k: v for k, v in done.items() if k not in ("parameters", "train_order")}
        point.write_text(json.dumps(old), encoding="utf-8")
    (out / ".learning_curve.csv.k3x_9a2b.tmp.csv").write_text("size,runs", encoding="utf-8")
    assert is_owned(out, "learning-curve")
    trained: list[tuple[int | None, int]] = []

    def counting(c, **kw):  # noqa: ANN001, ANN202
        trained.append((c.data.train_size, c.recipe.seed))
        return _finetuned(c, **kw)

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", counting)
    assert run_learning_curve(replace(cfg, sizes=(8, 16)), log=lambda _: None).trained == 1
    assert trained == [(16, 1)]
    mine = tmp_path / "analysis"
    (mine / "runs").mkdir(parents=True)
    (mine / "learning_curve.csv").write_text(
        "size,runs,spearman_mean,spearman_sd,pearson_mean\n8,1,40.0,,41\n", encoding="utf-8"
    )
    (mine / ".notes.md").write_text("mine\n", encoding="utf-8")
    assert not is_owned(mine, "learning-curve")


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda d: d.update(size=16), r"size8_seed1\.json: its 'size' is 16, not the 8 its file name says"),
        (lambda d: d.update(seed="1"), r"size8_seed1\.json: its 'seed' is '1', not the 1 its file name says"),
        (lambda d: d.pop("test"), r"size8_seed1\.json: its test figure 'spearman' is missing"),
        (lambda d: d["test"].update(spearman="91.8"), r"its test figure 'spearman' is '91.8', not a number"),
        (lambda d: d["test"].update(mae=None), r"its test figure 'mae' is None, not a number"),
        (lambda d: d.pop("validation"), r"its validation figure 'spearman' is missing"),
    ],
)
def test_a_point_file_edited_by_hand_is_refused_naming_it_and_the_field(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: object, says: str
) -> None:
    """A finished point whose record was edited, copied or renamed by hand (another size or seed than its
    file name says, a figure the table reads missing or not a number) was counted as another point of the
    curve (a size twice, the one it replaced left out) or ended the summary in a KeyError or TypeError
    traceback; it is refused naming the file and the field, before any work, and left as it was."""
    from dataclasses import replace

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)
    out = tmp_path / "curve"
    cfg = replace(config(pairs_file, out, (1,)), baselines=())
    run_learning_curve(cfg, log=lambda _: None)
    point = out / "runs" / "size8_seed1.json"
    done = json.loads(point.read_text(encoding="utf-8"))
    edit(done)  # type: ignore[operator]
    point.write_text(json.dumps(done), encoding="utf-8")
    _no_work(monkeypatch)
    with pytest.raises(StateError, match=says):
        run_learning_curve(cfg, log=lambda _: None)
    assert json.loads(point.read_text(encoding="utf-8")) == done


def test_a_point_copied_under_another_points_name_is_refused(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A point's file copied over another's (size 8's record as size 16's) made a table of size 8 twice
    and no size 16; it is refused naming the file."""
    from dataclasses import replace

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)
    out = tmp_path / "curve"
    cfg = replace(config(pairs_file, out, (1,)), baselines=())
    run_learning_curve(cfg, log=lambda _: None)
    (out / "runs" / "size16_seed1.json").write_bytes((out / "runs" / "size8_seed1.json").read_bytes())
    _no_work(monkeypatch)
    with pytest.raises(StateError, match=r"size16_seed1\.json: its 'size' is 8, not the 16"):
        run_learning_curve(cfg, log=lambda _: None)


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (
            lambda d, k: d.update({k: 86.3}),
            r"baselines\.json: its entry 'tfidf-char2/none' is 86\.3, not a record",
        ),
        (lambda d, k: d[k].pop("spearman"), r"entry 'tfidf-char2/none': figure 'spearman' is missing"),
        (
            lambda d, k: d[k].update(mse="0.02"),
            r"entry 'tfidf-char2/none': figure 'mse' is '0\.02', not a number",
        ),
        (lambda d, k: d[k].pop("name"), r"entry 'tfidf-char2/none' has no baseline 'name'"),
    ],
)
def test_a_baselines_file_edited_by_hand_is_refused_naming_it_and_the_entry(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: object, says: str
) -> None:
    """``baselines.json`` edited by hand (an entry replaced by a number, a figure of the table removed or
    made text) ended the resumed curve in an AttributeError, KeyError or TypeError traceback; it is refused
    naming the file and the entry, with the way to score the baselines again, before any point trains."""
    from dataclasses import replace

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)
    out = tmp_path / "curve"
    cfg = replace(config(pairs_file, out, (1,)), sizes=(8,))
    run_learning_curve(cfg, log=lambda _: None)
    path = out / "baselines.json"
    stored = json.loads(path.read_text(encoding="utf-8"))
    edit(stored, "tfidf-char2/none")  # type: ignore[operator]
    path.write_text(json.dumps(stored), encoding="utf-8")
    _no_work(monkeypatch)
    with pytest.raises(StateError, match=says + r".*delete it to score the baselines again"):
        run_learning_curve(replace(cfg, sizes=(8, 16)), log=lambda _: None)
    assert json.loads(path.read_text(encoding="utf-8")) == stored
    assert not (out / "runs" / "size16_seed1.json").exists()


@pytest.mark.parametrize("model", ["current", "notamodel"])
def test_a_model_that_cannot_load_is_refused_before_the_baselines_are_scored(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    """A base model that cannot load (``--model current``, a folder that is no model) with baselines that
    need no model was refused only by the first point: the baselines were scored first (use-m3 takes
    minutes) and ``--out`` was left holding their ``baselines.json``. It is refused before any work, and
    ``--out`` is not made."""
    from dataclasses import replace

    from nlsim.errors import ConfigError

    (tmp_path / "notamodel").mkdir()
    (tmp_path / "notamodel" / "readme.txt").write_text("my notes\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)

    def no_baseline(*args, **kw):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("a baseline was scored before the refusal")

    monkeypatch.setattr(nlsim.training.learning_curve, "get_baseline", no_baseline)
    cfg = replace(config(pairs_file, tmp_path / "curve", (1,)), model=model)
    with pytest.raises(ConfigError, match="current is a model store's|notamodel: not a model folder"):
        run_learning_curve(cfg, log=lambda _: None)
    assert not (tmp_path / "curve").exists()


def test_a_size_with_a_run_of_undefined_spearman_says_undefined_not_the_mean_of_the_others() -> None:
    """A point whose model gave every test pair one score has its Spearman and Pearson undefined (NaN, as
    nlsim writes it). Its size showed the mean ± sd of its other runs under the count of all of them
    ("3 runs", 2 measured); its figure now reads ``undefined`` in the table and is empty in the CSV, and the
    figures every run defines (MSE, MAE) are still given."""
    from nlsim.training.learning_curve import summary_markdown

    nan = float("nan")

    def row(size: int, seed: int, v: float) -> dict[str, object]:
        test = {"spearman": v, "pearson": v, "mse": 0.1 * seed, "mae": 0.2}
        return {"size": size, "seed": seed, "test": test, "validation": {"spearman": 70.0 + seed}}

    summary = summarize([row(10, 1, nan), row(10, 2, 80.0), row(10, 3, 82.0), row(20, 1, 85.0)])
    assert summary["spearman_mean"].isna().tolist() == [True, False]
    assert summary.to_csv(index=False).splitlines()[1].startswith("10,3,,,,,0"), summary.to_csv(index=False)
    md = summary_markdown(summary, {})
    assert "| 10 | 3 | undefined | undefined | 0.2000 ± 0.1000 | 0.2000 ± 0.0000 | 72.00 ± 1.00 |" in md, md
    assert "| 20 | 1 | 85.00 | 85.00 |" in md, md


def test_a_baseline_of_undefined_spearman_reads_undefined_in_the_table_and_the_plot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A baseline that gives every test pair one score (TF-IDF on test pairs sharing no character bigram:
    every cosine 0) has its Spearman and Pearson undefined (NaN); its table row and plot legend read
    ``nan``, and now ``undefined``, as ``nlsim evaluate`` says it."""
    import matplotlib.pyplot as plt

    from nlsim.training.learning_curve import plot, summary_markdown

    nan = float("nan")
    baseline = {"name": "tfidf-char2", "spearman": nan, "pearson": nan, "mse": 0.25, "mae": 0.5}
    row = {"size": 8, "seed": 1, "test": {"spearman": 80.0, "pearson": 81.0, "mse": 0.1, "mae": 0.2}}
    summary = summarize([row | {"validation": {"spearman": 79.0}}])
    md = summary_markdown(summary, {"tfidf-char2/none": baseline})
    assert "| baseline: tfidf-char2 | 1 | undefined | undefined | 0.2500 | 0.5000 | |" in md, md
    figures: list[object] = []
    monkeypatch.setattr(plt, "close", figures.append)  # the figure, kept to read its legend
    path = plot(summary, {"tfidf-char2/none": baseline}, tmp_path / "curve.png")
    assert path.read_bytes()[:4] == b"\x89PNG"
    (ax,) = figures[0].axes
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "tfidf-char2 (undefined)" in labels, labels


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("runs", r"curve[/\\]runs: a file where the curve keeps its points"),
        ("runs/size16_seed1.json", r"size16_seed1\.json: a folder where the curve writes its file"),
        ("baselines.json", r"baselines\.json: a folder where the curve writes its file"),
        ("learning_curve.png", r"learning_curve\.png: a folder where the curve writes its file"),
    ],
)
def test_a_name_the_curve_writes_held_by_a_folder_or_a_file_is_refused_before_any_work(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, says: str
) -> None:
    """``runs`` made a file, or a point's, the baselines' or the plot's name made a folder, in a curve's
    ``--out``: the write failed only after a point trained or the baselines were scored, with ``File exists``
    or ``Is a directory`` naming a temporary file. It is refused before any work, naming what holds the
    name, which is left as it was."""
    from dataclasses import replace

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)
    out = tmp_path / "curve"
    cfg = replace(config(pairs_file, out, (1,)), sizes=(8,))
    run_learning_curve(cfg, log=lambda _: None)
    held = out / name
    if name == "runs":
        for point in held.iterdir():
            point.unlink()
        held.rmdir()
        held.write_text("my notes\n", encoding="utf-8")
    else:
        if held.exists():
            held.unlink()
        held.mkdir()
    _no_work(monkeypatch)
    with pytest.raises(StateError, match=says + ".*move it away"):
        run_learning_curve(replace(cfg, sizes=(8, 16)), log=lambda _: None)
    assert held.is_file() if name == "runs" else held.is_dir()


def test_a_curve_whose_model_folder_holds_another_model_since_is_refused_before_any_work(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--model models/base`` replaced since the curve's first points (another model copied in, or the
    folder trained again) kept its name, so its settings matched: the new sizes trained from the other
    model beside the points of the first, one curve of two models. Each point now records the base model's
    fingerprint; a curve resumed with another is refused before any work, and the same model resumes it."""
    from dataclasses import replace

    held = {"fingerprint": "first-model"}

    def fake_load(name: str, **kw: object) -> SimpleNamespace:
        return SimpleNamespace(fingerprint=held["fingerprint"])

    monkeypatch.setattr(nlsim.training.learning_curve, "load_encoder", fake_load)
    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)
    cfg = replace(config(pairs_file, tmp_path / "curve", (1,)), sizes=(8,), baselines=())
    run_learning_curve(cfg, log=lambda _: None)
    point = tmp_path / "curve" / "runs" / "size8_seed1.json"
    assert json.loads(point.read_text(encoding="utf-8"))["model_fingerprint"] == "first-model"
    held["fingerprint"] = "another-model"
    trained: list[int | None] = []

    def counting(c, **kw):  # noqa: ANN001, ANN202
        trained.append(c.data.train_size)
        return _finetuned(c, **kw)

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", counting)
    with pytest.raises(StateError, match=r"size8_seed1\.json: trained from another model than --model"):
        run_learning_curve(replace(cfg, sizes=(8, 16)), log=lambda _: None)
    assert trained == [] and not (tmp_path / "curve" / "runs" / "size16_seed1.json").exists()
    held["fingerprint"] = "first-model"
    assert run_learning_curve(replace(cfg, sizes=(8, 16)), log=lambda _: None).trained == 1
    assert trained == [16]


def test_the_same_model_named_another_way_resumes_the_curve_and_another_model_is_refused(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A curve started with ``--model models/base`` and resumed with ``./models/base`` (or the folder's
    absolute path) was refused as made with other settings: the model's name as given was among them. The
    model is compared by what it is now (its fingerprint; its folder where it is not loaded), so the same
    model named another way resumes the curve, a point written before (its settings hashed with the name
    given there) too, and another model is still refused."""
    from dataclasses import replace

    folder = tmp_path / "models" / "base"
    folder.mkdir(parents=True)
    held = {"models/base": "first-model", "other": "another-model"}

    def fake_load(name: str, **kw: object) -> SimpleNamespace:
        return SimpleNamespace(fingerprint=held["other" if Path(name).name == "other" else "models/base"])

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(nlsim.training.learning_curve, "load_encoder", fake_load)
    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)
    cfg = replace(config(pairs_file, tmp_path / "curve", (1,)), sizes=(8,), baselines=(), model="models/base")
    run_learning_curve(cfg, log=lambda _: None)
    for name in ("./models/base", str(folder.resolve())):
        assert run_learning_curve(replace(cfg, model=name), log=lambda _: None).trained == 0  # all done
        assert run_learning_curve(replace(cfg, model=name, sizes=(8, 16)), log=lambda _: None).trained == 1
        (tmp_path / "curve" / "runs" / "size16_seed1.json").unlink()
    point = tmp_path / "curve" / "runs" / "size8_seed1.json"  # written before points kept a fingerprint
    done = json.loads(point.read_text(encoding="utf-8"))
    del done["model_fingerprint"]
    point.write_text(json.dumps(done), encoding="utf-8")
    resumed = replace(cfg, model="./models/base", sizes=(8, 16))
    assert run_learning_curve(resumed, log=lambda _: None).trained == 1
    (tmp_path / "curve" / "runs" / "size16_seed1.json").unlink()
    (tmp_path / "models" / "other").mkdir()
    for sizes in ((8,), (8, 16)):
        with pytest.raises(StateError, match=r"size8_seed1\.json: trained from another model than --model"):
            run_learning_curve(replace(cfg, model="models/other", sizes=sizes), log=lambda _: None)
    point.write_text(json.dumps({**done, "model_fingerprint": "first-model"}), encoding="utf-8")
    with pytest.raises(StateError, match=r"another model than --model models/other .*--model models/base"):
        run_learning_curve(replace(cfg, model="models/other"), log=lambda _: None)
    assert not (tmp_path / "curve" / "runs" / "size16_seed1.json").exists()


def test_an_undefined_figure_is_written_as_null_and_read_back_undefined(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A point whose model gave every test pair one score (Spearman and Pearson undefined) was written with
    Python's bare ``NaN``, which strict JSON readers (``jq``, a browser, another language's parser) refuse,
    and the resumed run said ``test Spearman nan``. It is written as ``null``, read back as undefined, and
    the resumed run says ``undefined``; a point an earlier nlsim wrote with ``NaN`` is still read."""
    import json
    from dataclasses import replace
    from types import SimpleNamespace

    def flat(cfg, *, pairs, log):  # noqa: ANN001, ANN202
        test = {"spearman": float("nan"), "pearson": float("nan"), "mse": 0.1, "mae": 0.2, "n": 12}
        best = {"spearman": 50.0, "epoch": 1, "step": 2}
        return SimpleNamespace(best=best, metrics={"after/test": test}, seconds=1.0, seconds_per_epoch=[1.0])

    def strict(text: str) -> dict:
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in the point's JSON"))

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", flat)
    cfg = replace(config(pairs_file, tmp_path / "curve", (1,)), baselines=())
    assert run_learning_curve(cfg, log=lambda _: None).trained == 2
    point = tmp_path / "curve" / "runs" / "size8_seed1.json"
    assert strict(point.read_text(encoding="utf-8"))["test"]["spearman"] is None
    _no_work(monkeypatch)
    said: list[str] = []
    again = run_learning_curve(cfg, log=said.append)
    assert again.trained == 0
    assert "size 8 seed 1: done already (test Spearman undefined), skipped" in said, said
    table = (tmp_path / "curve" / "learning_curve.md").read_text()
    assert "| 8 | 1 | undefined | undefined |" in table
    assert ", 1 epoch, lr" in table.splitlines()[0]  # not "1 epochs"
    done = json.loads(point.read_text(encoding="utf-8"))
    done["test"]["spearman"] = float("nan")
    point.write_text(json.dumps(done), encoding="utf-8")  # as an earlier nlsim wrote it: NaN
    assert run_learning_curve(cfg, log=lambda _: None).trained == 0


@pytest.mark.parametrize(
    ("part", "name", "value"),
    [
        ("test", "mse", float("nan")),
        ("test", "spearman", float("inf")),
        ("validation", "spearman", -float("inf")),
    ],
)
def test_a_point_holding_a_figure_no_run_gives_is_refused_naming_it(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, part: str, name: str, value: float
) -> None:
    """A figure no run gives (an error left undefined, ``NaN``; a correlation of ``Infinity``, as JSON
    readers take it) in a point edited by hand was taken as a number: the table read ``undefined`` for the
    size's MSE, or ``inf`` for its Spearman. It is refused naming the file and the field, as a figure that
    is not a number is."""
    from dataclasses import replace

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)
    out = tmp_path / "curve"
    cfg = replace(config(pairs_file, out, (1,)), baselines=())
    run_learning_curve(cfg, log=lambda _: None)
    point = out / "runs" / "size8_seed1.json"
    done = json.loads(point.read_text(encoding="utf-8"))
    done[part][name] = value
    point.write_text(json.dumps(done), encoding="utf-8")
    _no_work(monkeypatch)
    with pytest.raises(
        StateError, match=rf"size8_seed1\.json: its {part} figure '{name}' is -?(nan|inf), not"
    ):
        run_learning_curve(cfg, log=lambda _: None)


def test_a_baseline_holding_a_figure_no_scorer_gives_is_refused_naming_it(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``baselines.json`` edited by hand to hold an infinite figure was taken as a number (the table read
    ``inf``); it is refused naming the file and the entry."""
    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)
    out = tmp_path / "curve"
    cfg = config(pairs_file, out, (1,))
    run_learning_curve(cfg, log=lambda _: None)
    path = out / "baselines.json"
    stored = json.loads(path.read_text(encoding="utf-8"))
    stored["tfidf-char2/none"]["pearson"] = float("inf")
    path.write_text(json.dumps(stored), encoding="utf-8")
    _no_work(monkeypatch)
    with pytest.raises(StateError, match=r"entry 'tfidf-char2/none': figure 'pearson' is inf, not"):
        run_learning_curve(cfg, log=lambda _: None)


def test_a_baseline_named_twice_is_refused_as_a_size_or_seed_named_twice_is(tmp_path: Path) -> None:
    """``--baselines tfidf-char2,tfidf-char2`` was taken, where a size or a seed given twice is refused:
    the baseline would be scored and listed twice."""
    from dataclasses import replace

    from nlsim.errors import ConfigError

    with pytest.raises(ConfigError, match=r"--baselines tfidf-char2,tfidf-char2: a baseline twice"):
        replace(config(tmp_path / "p.tsv", tmp_path / "curve", (1,)), baselines="tfidf-char2,tfidf-char2")


def test_a_curve_resumed_where_its_points_would_train_in_another_precision_is_refused_before_any_work(
    pairs_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A curve's points train in bf16 where the CPU computes it (``--train-precision auto``) and in fp32
    where it does not: a curve started on one CPU kind and resumed on another mixed both in one table,
    unsaid. Each point records the precision it trained in, a point left to train in another is refused
    before any work (naming the point and the option that trains as it did), ``--train-precision``
    resumes it, and the table names the precision."""
    from dataclasses import replace

    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)
    monkeypatch.setenv("NLSIM_DEVICE", "cpu")
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx2 avx512f avx512_bf16")
    cfg = replace(config(pairs_file, tmp_path / "curve", (1,)), sizes=(8,), baselines=())
    run_learning_curve(cfg, log=lambda _: None)
    point = tmp_path / "curve" / "runs" / "size8_seed1.json"
    assert json.loads(point.read_text(encoding="utf-8"))["train_precision"] == "bf16"
    assert "bf16 training" in (tmp_path / "curve" / "learning_curve.md").read_text().splitlines()[0]
    monkeypatch.setenv("NLSIM_CPU_FLAGS", "avx avx2 fma")
    assert run_learning_curve(cfg, log=lambda _: None).trained == 0  # all done: nothing trains in fp32
    real_load = nlsim.training.learning_curve.load_encoder
    _no_work(monkeypatch)
    with pytest.raises(StateError, match=r"size8_seed1\.json: trained in bf16.*fp32.*--train-precision bf16"):
        run_learning_curve(replace(cfg, sizes=(8, 16)), log=lambda _: None)
    assert not (tmp_path / "curve" / "runs" / "size16_seed1.json").exists()
    monkeypatch.setattr(nlsim.training.learning_curve, "finetune", _finetuned)
    monkeypatch.setattr(nlsim.training.learning_curve, "load_encoder", real_load)
    resumed = run_learning_curve(replace(cfg, sizes=(8, 16), train_precision="bf16"), log=lambda _: None)
    assert resumed.trained == 1


def _split_table(train_scores: list[float]) -> pd.DataFrame:
    """Pairs read for training: ``train_scores`` in train, four validation pairs of three scores."""
    scores = [*train_scores, 1.0, 0.0, 1.0, 0.25]
    splits = ["train"] * len(train_scores) + ["validation"] * 4
    return pd.DataFrame({"pair_id": [f"p{i}" for i in range(len(scores))], "split": splits, "score": scores})


def test_every_seeds_points_are_checked_for_a_draw_of_one_score_before_any_work() -> None:
    """The first seed draws, at size 4, a pair of each score; the second draws four pairs of one score:
    the curve names the second seed's point, not only the first seed's points being checked."""
    import numpy as np

    from nlsim.errors import ConfigError
    from nlsim.training.learning_curve import check_points_trainable

    def one_score(seed: int) -> bool:
        return all(i != 7 for i in np.random.default_rng(seed).permutation(16)[:4])

    bad = next(s for s in range(1000) if one_score(s))
    good = next(s for s in range(1000) if not one_score(s))
    cfg = LearningCurveConfig(pairs="p.tsv", out="curve", sizes=(16, 4), seeds=(good, bad))
    with pytest.raises(ConfigError, match=rf"--sizes 4 with seed {bad}: the 4 training pairs drawn from"):
        check_points_trainable(_split_table([0.0] * 7 + [1.0] + [0.0] * 8), cfg)


def test_a_training_split_of_one_score_is_refused_as_the_split_not_as_a_size_too_small() -> None:
    """Every training pair of one score: no size helps, so the refusal is of the pair file's split
    (naming its score field), not the advice to give a larger size."""
    from nlsim.errors import InputError
    from nlsim.training.learning_curve import check_points_trainable

    cfg = LearningCurveConfig(pairs="p.tsv", out="curve", sizes=(8, 4), seeds=(1,))
    with pytest.raises(InputError, match="field 'score': every training pair has the score 0.5") as refused:
        check_points_trainable(_split_table([0.5] * 8), cfg)
    assert "larger size" not in str(refused.value)


def test_a_point_written_before_points_recorded_their_pairs_resumes_and_one_on_other_pairs_is_refused(
    tmp_path: Path,
) -> None:
    """A finished point without the digest of its pairs or of their order (written before points kept
    them) is taken as it is; one whose digest is of other pairs, or of another order, is refused."""
    from nlsim.training.learning_curve import check_point

    cfg = LearningCurveConfig(pairs="p.tsv", out=str(tmp_path), sizes=(8,), seeds=(1,))
    path = tmp_path / "runs" / "size8_seed1.json"
    old = {"settings": cfg.settings_key(model=cfg.model)}
    check_point(path, old, cfg, "pairs-now", "order-now")
    check_point(path, old | {"data": "pairs-now", "train_order": "order-now"}, cfg, "pairs-now", "order-now")
    with pytest.raises(StateError, match="trained on other pairs"):
        check_point(path, old | {"data": "pairs-then"}, cfg, "pairs-now", "order-now")
    with pytest.raises(StateError, match="in another order"):
        check_point(path, old | {"train_order": "order-then"}, cfg, "pairs-now", "order-now")


def test_a_size_past_the_training_pairs_as_the_model_reads_them_is_refused_naming_sizes() -> None:
    """Seven training rows, one of them a pair of another row given again in Simplified characters: the
    model reads six pairs, so ``--sizes 7`` is refused as the curve's option, counting six."""
    from nlsim.errors import ConfigError
    from nlsim.training.learning_curve import check_curve_splits

    scores = {"train": [0.75, 1, 0, 0.5, 0.25, 1], "validation": [1, 0, 1, 0.25], "test": [1, 0, 0.5]}
    rows = [(f"{split} {n}", split, s) for split, given in scores.items() for n, s in enumerate(given)]
    rows[5] = ("訓練 5", "train", 1.0)
    rows.insert(6, ("训练 5", "train", 1.0))  # the sixth training pair again, in Simplified characters
    table = pd.DataFrame(
        {
            "pair_id": [f"p{i}" for i in range(len(rows))],
            "split": [r[1] for r in rows],
            "text_a": [f"{r[0]} 甲" for r in rows],
            "text_b": [f"{r[1]} {i} 乙" if i != 6 else "train 5 乙" for i, r in enumerate(rows)],
            "score": [float(r[2]) for r in rows],
        }
    )
    cfg = LearningCurveConfig(pairs="p.tsv", out="curve", sizes=(4, 7), seeds=(1,), conversion="tw2sp")
    with pytest.raises(ConfigError, match="--sizes 7: more than the 6 train pairs of p.tsv"):
        check_curve_splits(table, cfg)
