"""The editors' loop: draw new pairs (never annotated ones, near the threshold first), merge a filled file."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from nlsim.annotation.draw import draw_candidates, select_candidates
from nlsim.annotation.merge import merge_annotations
from nlsim.errors import InputError
from nlsim.io import editor_file
from nlsim.io.model_store import ModelStore
from nlsim.io.pairs import load_pairs
from nlsim.io.tables import read_table
from tests.command import nlsim, refused

ROOT = Path(__file__).resolve().parent.parent

TITLES = [
    "股市今天大漲",
    "股市今日大漲三成",
    "股市明天大跌",
    "足球聯賽開幕",
    "足球聯賽閉幕",
    "籃球比賽結果",
    "北京房價上漲",
    "上海房價下跌",
    "公務員考試報名",
    "公務員考試成績",
    "新手機發佈",
    "手機價格下調",
]


@pytest.fixture()
def files(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus.tsv"
    pd.DataFrame({"id": [f"n{i:02d}" for i in range(len(TITLES))], "title": TITLES}).to_csv(
        corpus, sep="\t", index=False
    )
    pairs = tmp_path / "pairs.tsv"
    pd.DataFrame(
        {
            "pair_id": ["p1", "p2"],
            "split": ["train", "test"],
            "id_a": ["n00", "n04"],
            "id_b": ["n01", "n03"],
            "text_a": [TITLES[0], TITLES[4]],
            "text_b": [TITLES[1], TITLES[3]],
            "score": ["1.0", "0.75"],
            "annotations": ["1.0", "0.75"],
            "stratum": ["x", "y"],
        }
    ).to_csv(pairs, sep="\t", index=False)
    return corpus, pairs


def test_draw_never_repeats_annotated_pairs(files: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, pairs = files
    out = tmp_path / "todo.csv"
    res = draw_candidates(
        corpus,
        pairs,
        out,
        n=12,
        scorer="tfidf-char2",
        conversion="none",
        threshold=0.3,
        k=5,
        log=lambda _: None,
    )
    todo = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert res.n == len(todo) == 12
    keys = {tuple(sorted(x)) for x in zip(todo["id_a"], todo["id_b"], strict=True)}
    assert ("n00", "n01") not in keys and ("n03", "n04") not in keys
    assert len(keys) == len(todo)
    assert (todo["score"] == "").all()
    sims = todo["similarity"].astype(float).to_numpy()
    near = todo["stratum"] == "near-threshold"
    assert near.iloc[: near.sum()].all()  # near-threshold pairs come first
    assert np.abs(sims[near] - 0.3).max() <= np.abs(sims[~near] - 0.3).max()


def test_draw_threads_reach_the_encoder_and_its_reranker(
    files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`annotate draw --threads N` sets the CPU threads of the encoder that embeds the corpus and of its
    reranker, as `embed`, `calibrate` and `evaluate` do; without it both keep their own choice."""
    from nlsim import cli
    from nlsim.annotation import draw

    given: dict[str, list[int | None]] = {"encoder": [], "reranker": []}

    class Encoder:
        path = None

        def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
            rng = np.random.default_rng(0)
            vectors = rng.normal(size=(len(texts), 8)).astype(np.float32)
            return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def load_encoder(path: str, *, threads: int | None = None) -> Encoder:
        given["encoder"].append(threads)
        return Encoder()

    def load_reranker(path: str, threads: int | None = None) -> None:
        given["reranker"].append(threads)

    monkeypatch.setattr(draw, "load_encoder", load_encoder)
    monkeypatch.setattr(draw, "load_reranker", load_reranker)
    monkeypatch.setattr(draw, "load_calibration", lambda path: None)
    corpus, pairs = files
    base = ["annotate", "draw", "--corpus", str(corpus), "--pairs", str(pairs), "-n", "4", "--model", "m"]
    assert cli.main([*base, "--out", str(tmp_path / "a.csv"), "--threads", "3", "--convert", "none"]) == 0
    assert cli.main([*base, "--out", str(tmp_path / "b.csv"), "--convert", "none"]) == 0
    assert given == {"encoder": [3, None], "reranker": [3, None]}


def test_select_candidates_stratifies() -> None:
    pool = pd.DataFrame({"a": range(100), "b": range(1, 101), "similarity": np.linspace(0, 0.99, 100)})
    got = select_candidates(pool, 20, 0.5, strata=5, near_fraction=0.5)
    near = got[got["stratum"] == "near-threshold"]
    assert len(near) == 10 and (near["similarity"] - 0.5).abs().max() < 0.06
    assert got[got["stratum"] != "near-threshold"]["stratum"].value_counts().tolist() == [2] * 5


@pytest.mark.parametrize(
    ("n", "strata"),
    [
        (1, {"near-threshold": 1}),
        (2, {"near-threshold": 1, "sim-bin-5": 1}),
        (4, {"near-threshold": 2, "sim-bin-4": 1, "sim-bin-5": 1}),
        (6, {"near-threshold": 3, "sim-bin-3": 1, "sim-bin-4": 1, "sim-bin-5": 1}),
    ],
)
def test_a_draw_smaller_than_the_strata_draws_from_those_nearest_the_threshold(
    n: int, strata: dict[str, int]
) -> None:
    """``nlsim annotate draw -n 1`` drew its one pair from the lowest stratum (half of one pair, rounded to
    even, is none), and a draw with fewer pairs left than strata took them from the lowest similarities,
    far below a threshold of 0.85, where the model is surest. The odd pair goes to the pairs nearest the
    threshold, and the strata nearest it are drawn from first."""
    pool = pd.DataFrame({"a": range(100), "b": range(1, 101), "similarity": np.linspace(0, 0.99, 100)})
    got = select_candidates(pool, n, 0.85)
    assert got["stratum"].value_counts().to_dict() == strata
    assert got["similarity"].iloc[0] == pytest.approx(0.85)


@pytest.mark.parametrize(("size", "n"), [(14, 13), (15, 15), (16, 40), (2374, 2374)])
def test_select_candidates_draws_every_pair_asked_that_the_pool_holds(size: int, n: int) -> None:
    """A stratum with fewer pairs than its share (equal-count strata differ by one) leaves its shortfall to
    the strata with pairs to spare: a small or mostly annotated corpus gives the -n pairs asked, or every
    pair it has, never one fewer."""
    pool = pd.DataFrame(
        {"a": range(size), "b": range(1, size + 1), "similarity": np.random.default_rng(size).random(size)}
    )
    got = select_candidates(pool, n, 0.5)
    assert len(got) == min(n, size)
    assert not got.duplicated(["a", "b"]).any()
    again = select_candidates(pool, n, 0.5)
    assert got.equals(again)  # the same draw for the same seed


def test_draw_says_when_the_models_threshold_was_calibrated_on_texts_converted_otherwise(
    files: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A model folder trained and calibrated with ``--convert none`` reads the corpus converted with
    draw's default ``tw2sp``: its threshold, which the draw centres on, is not one for those texts, as
    ``nlsim dedup`` and ``nlsim evaluate`` warn; draw says so too."""
    from nlsim.annotation import draw as draw_module
    from nlsim.annotation.draw import DrawModel
    from nlsim.evaluation.calibration import calibrate_scores, save_calibration

    folder = tmp_path / "model"
    folder.mkdir()
    cosines, gold = np.array([0.9, 0.8, 0.85, 0.2, 0.1, 0.3]), np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.25])
    save_calibration(calibrate_scores(cosines, gold, 0.875, "best-f1", conversion="none"), folder)

    class Encoder:
        path = str(folder)

        def encode(self, texts: list[str], progress: bool = False) -> np.ndarray:
            vectors = np.random.default_rng(0).normal(size=(len(texts), 8)).astype(np.float32)
            return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    monkeypatch.setattr(draw_module, "draw_model", lambda *_: DrawModel("model", str(folder), Encoder()))
    corpus, pairs = files
    for conversion, warned in (("tw2sp", True), ("none", False)):
        caplog.clear()
        with caplog.at_level("WARNING", logger="nlsim"):
            draw_candidates(
                corpus, pairs, tmp_path / "todo.csv", n=4, scorer=str(folder), conversion=conversion
            )
        said = (
            f"--convert {conversion}: the threshold of {folder} was calibrated on texts converted with 'none'"
        )
        assert (said in caplog.text) is warned, caplog.text


def test_merge_adds_exactly_the_filled_pairs(files: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, pairs = files
    out = tmp_path / "todo.csv"
    draw_candidates(
        corpus, pairs, out, n=4, scorer="tfidf-char2", conversion="none", threshold=0.3, log=lambda _: None
    )
    todo = pd.read_csv(out, dtype=str, keep_default_na=False)
    todo["score"] = ["0", "0.25", "0.75", "1"]
    todo.to_csv(out, index=False)
    before = pairs.read_text(encoding="utf-8")
    res = merge_annotations(out, pairs, log=lambda _: None)
    merged = load_pairs(pairs)
    assert res.added == 4 and len(merged) == 6
    assert pairs.read_text(encoding="utf-8").startswith(before.rstrip("\n"))  # old rows untouched
    new = merged.iloc[2:]
    assert new["pair_id"].tolist() == todo["pair_id"].tolist()
    assert new["score"].tolist() == [0.0, 0.25, 0.75, 1.0]
    assert (new["split"] == "train").all()
    assert new["stratum"].str.startswith("editor-loop:").all()
    with pytest.raises(InputError, match="already annotated"):
        merge_annotations(out, pairs, log=lambda _: None)


def _filled(tmp_path: Path, scores: list[str], **extra: list[str]) -> Path:
    n = len(scores)
    frame = pd.DataFrame(
        {
            "pair_id": [f"e{i}" for i in range(n)],
            "id_a": [f"z0{i}" for i in range(n)],
            "id_b": [f"z1{i}" for i in range(n)],
            "text_a": [f"甲{i}" for i in range(n)],
            "text_b": [f"乙{i}" for i in range(n)],
            "score": scores,
        }
    )
    for k, v in extra.items():
        frame[k] = v
    path = tmp_path / "filled.csv"
    frame.to_csv(path, index=False)
    return path


@pytest.mark.parametrize(
    ("scores", "extra", "row", "field", "reason"),
    [
        # rows as a spreadsheet shows the file: the header is sheet row 1, the first pair sheet row 2
        (["0.5", "0.6"], {}, 3, "score", "not one of the rubric's levels"),
        (["0.5", "yes"], {}, 3, "score", "not a number"),
        (["0.5", ""], {}, 3, "score", "not scored"),
        (["0.5", "nan"], {}, 3, "score", "not scored"),  # was "not one of the rubric's levels"
        (["NULL", "0.5"], {}, 2, "score", "not scored"),  # was "not a number"
        (["2"], {}, 2, "score", "not one of the rubric's levels"),
        (["0.5", "1"], {"text_b": ["乙", ""]}, 3, "text_b", "empty text"),
        (["0.5", "1"], {"pair_id": ["e0", "e0"]}, 3, "pair_id", "duplicate pair id"),
        (["0.5", "1"], {"id_a": ["z00", ""]}, 3, "id_a", "a pair names both its items or neither"),
        (["0.5", "1"], {"id_b": ["", "z11"]}, 2, "id_b", "a pair names both its items or neither"),
    ],
)
def test_bad_filled_files_are_refused(
    files: tuple[Path, Path],
    tmp_path: Path,
    scores: list[str],
    extra: dict,
    row: int,
    field: str,
    reason: str,
) -> None:
    _, pairs = files
    before = pairs.read_bytes()
    path = _filled(tmp_path, scores, **extra)
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=lambda _: None)
    assert (err.value.row, err.value.field) == (row, field) and err.value.sheet
    assert reason in err.value.reason and f"sheet row {row}, field '{field}'" in str(err.value)
    assert pairs.read_bytes() == before


@pytest.mark.parametrize("dropped", ["text_a", "text_b", "id_a", "id_b"])
def test_a_filled_file_without_a_text_or_one_id_column_is_refused_by_its_field(
    files: tuple[Path, Path], tmp_path: Path, dropped: str
) -> None:
    _, pairs = files
    before = pairs.read_bytes()
    path = _filled(tmp_path, ["0.5"])
    pd.read_csv(path, dtype=str).drop(columns=[dropped]).to_csv(path, index=False)
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=lambda _: None)
    assert (err.value.row, err.value.field) == (None, dropped) and "missing column" in err.value.reason
    assert pairs.read_bytes() == before


def test_blank_rows_skipped_when_asked(files: tuple[Path, Path], tmp_path: Path) -> None:
    _, pairs = files
    res = merge_annotations(
        _filled(tmp_path, ["0.5", "", "1"]), pairs, split="validation", skip_blank=True, log=lambda _: None
    )
    assert (res.added, res.skipped_blank) == (2, 1)
    assert load_pairs(pairs)["split"].tolist()[-2:] == ["validation", "validation"]


# --- through the command line (python -m nlsim annotate ...) ---------------------------------------------


def _fill(path: Path, scores: list[str] | None = None) -> pd.DataFrame:
    todo = pd.read_csv(path, dtype=str, keep_default_na=False)
    todo["score"] = scores or [["0", "0.25", "0.5", "0.75", "1"][i % 5] for i in range(len(todo))]
    todo.to_csv(path, index=False)
    return todo


@pytest.mark.slow
def test_two_draws_in_one_minute_give_distinct_ids_and_both_merge(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    corpus, pairs = files
    draw = ["annotate", "draw", "--corpus", corpus, "--model", "tfidf-char2", "--convert", "none"]
    first, second = tmp_path / "first.csv", tmp_path / "second.csv"
    assert nlsim(*draw, "--pairs", pairs, "--out", first, "-n", "5", cwd=tmp_path).returncode == 0
    one = _fill(first)
    assert nlsim("annotate", "merge", "--filled", first, "--pairs", pairs, cwd=tmp_path).returncode == 0
    proc = nlsim(*draw, "--pairs", pairs, "--out", second, "-n", "5", "--seed", "1", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    two = _fill(second)
    assert not set(one["pair_id"]) & set(two["pair_id"])  # other pairs, other ids, whatever the minute
    proc = nlsim("annotate", "merge", "--filled", second, "--pairs", pairs, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert len(load_pairs(pairs)) == 2 + len(one) + len(two)


@pytest.mark.slow
def test_a_pair_has_one_id_in_every_draw_and_an_id_one_pair(files: tuple[Path, Path], tmp_path: Path) -> None:
    corpus, _ = files
    ids = []
    for name, seed in (("a.csv", "0"), ("b.csv", "3")):
        out = tmp_path / name
        proc = nlsim(
            "annotate", "draw", "--corpus", corpus, "--model", "tfidf-char2", "--convert", "none",
            "--out", out, "-n", "30", "--seed", seed, cwd=tmp_path,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        todo = pd.read_csv(out, dtype=str, keep_default_na=False)
        ids.append(
            {tuple(sorted(p)): i for i, *p in zip(todo["pair_id"], todo["id_a"], todo["id_b"], strict=True)}
        )
    shared = set(ids[0]) & set(ids[1])
    assert shared and all(ids[0][p] == ids[1][p] for p in shared)  # one pair, one id ...
    every = {**ids[0], **ids[1]}
    assert len(set(every.values())) == len(every) > len(ids[0])  # ... and one id, one pair


@pytest.mark.slow
@pytest.mark.parametrize(
    ("change", "row", "field", "words"),
    [
        ({"id_b": "n00"}, 3, "id_b", ["paired with itself"]),  # same id, other text
        ({"id_b": "n00", "text_b": TITLES[0]}, 3, "id_b", ["paired with itself"]),  # same id, same text
        ({"text_a": "股市今天大漲！"}, 3, "text_a", ["'n00'", "another text"]),  # pair file: n00 is TITLES[0]
    ],
)
def test_merge_refuses_self_pairs_and_ids_with_another_text(
    files: tuple[Path, Path], tmp_path: Path, change: dict[str, str], row: int, field: str, words: list[str]
) -> None:
    _, pairs = files
    filled = tmp_path / "filled.csv"
    frame = pd.DataFrame(
        {
            "pair_id": ["e1", "e2"],
            "id_a": ["n02", "n00"],
            "id_b": ["n05", "n06"],
            "text_a": [TITLES[2], TITLES[0]],
            "text_b": [TITLES[5], TITLES[6]],
            "score": ["0", "0.25"],
        }
    )
    for col, value in change.items():
        frame.loc[1, col] = value
    frame.to_csv(filled, index=False)
    before = pairs.read_bytes()
    line = refused(
        nlsim("annotate", "merge", "--filled", filled, "--pairs", pairs, cwd=tmp_path),
        *words,
        command="annotate",
        alone=True,
    )
    assert f"sheet row {row}, field '{field}'" in line
    assert pairs.read_bytes() == before


@pytest.mark.slow
def test_merge_refuses_an_id_given_two_texts_in_one_file(files: tuple[Path, Path], tmp_path: Path) -> None:
    _, pairs = files
    filled = tmp_path / "filled.csv"
    pd.DataFrame(
        {
            "pair_id": ["e1", "e2"],
            "id_a": ["z1", "z1"],
            "id_b": ["z2", "z3"],
            "text_a": ["甲", "丙"],
            "text_b": ["乙", "丁"],
            "score": ["0", "1"],
        }
    ).to_csv(filled, index=False)
    before = pairs.read_bytes()
    line = refused(
        nlsim("annotate", "merge", "--filled", filled, "--pairs", pairs, cwd=tmp_path),
        "'z1'",
        command="annotate",
        alone=True,
    )
    assert "sheet row 3, field 'text_a'" in line and "than at sheet row 2" in line
    assert pairs.read_bytes() == before


@pytest.mark.slow
def test_merge_refuses_a_file_without_pairs(files: tuple[Path, Path], tmp_path: Path) -> None:
    _, pairs = files
    filled = tmp_path / "filled.csv"
    filled.write_text("pair_id,id_a,id_b,text_a,text_b,similarity,stratum,score,annotator,notes\n")
    before = pairs.read_bytes()
    refused(
        nlsim("annotate", "merge", "--filled", filled, "--pairs", pairs, cwd=tmp_path),
        "no pairs",
        command="annotate",
        alone=True,
    )
    assert pairs.read_bytes() == before


def test_merge_refuses_the_pair_file_itself_as_the_filled_file(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    """``--filled pairs.tsv --pairs pairs.tsv`` (or the pair file by another path or a link) listed each row
    as already annotated and offered ``--overrule``, which made every training pair an editor's verdict
    overruling the annotators' score with the same score, each acting as a link. Refused by name now, before
    anything is written (exit 2), however the pair file is named."""
    from nlsim.clusters.verdicts import store_path

    _, pairs = files
    before = pairs.read_bytes()
    (tmp_path / "link.tsv").symlink_to(pairs)
    for filled in (pairs.name, f"./{pairs.name}", "link.tsv"):
        for more in ((), ("--overrule",)):
            proc = nlsim("annotate", "merge", "--filled", filled, "--pairs", pairs.name, *more, cwd=tmp_path)
            refused(proc, 2, "is the pair file --pairs pairs.tsv itself", command="annotate", alone=True)
    assert pairs.read_bytes() == before and not store_path(pairs).exists()


@pytest.mark.slow
def test_draw_with_a_reranker_draws_on_the_rerank_score_around_its_threshold(
    small_reranked_model: Path, tmp_path: Path
) -> None:
    from nlsim.encoders import load_encoder
    from nlsim.rerank.reranker import load_reranker

    corpus = tmp_path / "corpus.parquet"
    pd.read_parquet(ROOT / "data/bbc.parquet").iloc[:60].to_parquet(corpus)
    store = ModelStore(tmp_path / "models")
    store.claim()
    version = store.new_version_dir("ab" * 32)
    shutil.copytree(small_reranked_model, version)
    store.register(version, {"fingerprint": "ab" * 32})
    store.promote(version, "the model under test")
    out = tmp_path / "todo.csv"
    proc = nlsim(
        "annotate", "draw", "--corpus", corpus, "--model", "current", "--model-store", store.root,
        "--convert", "none", "--out", out, "-n", "12", "--text-field", "title", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "drawn on the rerank score" in proc.stderr
    todo = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(todo.columns) == list(editor_file.COLUMNS)
    reranker = load_reranker(small_reranked_model)
    assert reranker is not None and reranker.threshold is not None
    assert set(todo["model"]) == {version.name}
    assert np.allclose(todo["threshold"].astype(float), reranker.threshold, atol=1e-6)
    cosine = load_encoder(str(small_reranked_model)).encode(todo["text_a"].tolist() + todo["text_b"].tolist())
    cos = (cosine[: len(todo)] * cosine[len(todo) :]).sum(axis=1)
    expected = reranker.combine(cos, reranker.cross_scores(todo["text_a"], todo["text_b"], precision="fp32"))
    np.testing.assert_allclose(todo["similarity"].astype(float), expected, atol=2e-4)
    near = (todo["stratum"] == "near-threshold").to_numpy()
    dist = np.abs(todo["similarity"].astype(float).to_numpy() - reranker.threshold)
    assert near.sum() == 6 and dist[near].max() <= dist[~near].min()


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("mine", "is not a model store nlsim wrote (no .nlsim.json"),
        ("none", "does not exist (no such folder)"),
    ],
)
def test_draw_with_the_current_model_checks_the_store_as_a_run_does(
    files: tuple[Path, Path], tmp_path: Path, given: str, said: str
) -> None:
    """``--model current`` with a folder of the user's given as the store by mistake is refused as no model
    store (as nlsim dedup refuses it), not read as a store where no model was promoted yet."""
    corpus, pairs = files
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine", encoding="utf-8")
    proc = nlsim(
        "annotate", "draw", "--corpus", corpus, "--pairs", pairs, "--model", "current",
        "--model-store", tmp_path / given, "--out", tmp_path / "todo.csv", cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert said in proc.stderr and "`nlsim pipeline` filled (its --model-store" in proc.stderr
    assert "no model has been promoted" not in proc.stderr
    assert not (tmp_path / "todo.csv").exists()


def test_a_text_a_tsv_pair_file_cannot_hold_is_refused_by_its_row_in_the_filled_file(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    _, pairs = files
    before = pairs.read_bytes()
    path = _filled(tmp_path, ["0.5", "1"], text_b=["乙", "Storm\nupdate"])
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=lambda _: None)
    assert (Path(err.value.file), err.value.row, err.value.field) == (path, 3, "text_b")
    assert "tab or newline" in err.value.reason
    assert pairs.read_bytes() == before


def test_merge_into_a_parquet_pair_file_with_integer_ids(tmp_path: Path) -> None:
    """Integer ids (one missing) stay integers; the editor's ids join them as numbers, and an id that is
    not a number turns the column into text instead of failing to write."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pairs = tmp_path / "pairs.parquet"
    table = {
        "pair_id": ["p1", "p2"],
        "split": ["train", "train"],
        "id_a": pa.array([101, None], pa.int64()),
        "id_b": pa.array([102, 103], pa.int64()),
        "text_a": ["甲一", "甲二"],
        "text_b": ["乙一", "乙二"],
        "score": [1.0, 0.5],
    }
    pq.write_table(pa.table(table), pairs)
    filled = tmp_path / "filled.csv"
    rows = {"pair_id": ["e1"], "id_a": ["201"], "id_b": ["202"], "text_a": ["丙"], "text_b": ["丁"]}
    pd.DataFrame({**rows, "score": ["0.75"]}).to_csv(filled, index=False)
    assert merge_annotations(filled, pairs, log=lambda _: None).added == 1
    back = pq.read_table(pairs)
    assert back.schema.field("id_a").type == pa.int64()
    assert back.column("id_a").to_pylist() == [101, None, 201]
    assert load_pairs(pairs)["pair_id"].tolist() == ["p1", "p2", "e1"]
    more = {**rows, "pair_id": ["e2"], "id_a": ["n05"], "id_b": ["n06"], "text_a": ["戊"], "text_b": ["己"]}
    pd.DataFrame({**more, "score": ["0"]}).to_csv(filled, index=False)
    rows_before = len(load_pairs(pairs))
    merge_annotations(filled, pairs, log=lambda _: None)
    assert pq.read_table(pairs).column("id_a").to_pylist() == ["101", None, "201", "n05"]
    assert pq.read_table(pairs).column("id_b").to_pylist() == ["102", "103", "202", "n06"]
    assert len(load_pairs(pairs)) == rows_before + 1


def test_merge_into_pandas_nullable_columns_keeps_empty_cells_empty(tmp_path: Path) -> None:
    """Int64 ids with a gap (pandas' <NA>) stay integers, a string column the editor left out stays
    empty (never the text "<NA>"), and an id written "007" is kept as written, not read as 7."""
    pairs = tmp_path / "pairs.parquet"
    pd.DataFrame(
        {
            "pair_id": ["p1", "p2"],
            "split": ["train", "test"],
            "id_a": pd.array([None, 2], dtype="Int64"),
            "id_b": pd.array([5, 5], dtype="Int64"),
            "text_a": ["甲一", "甲二"],
            "text_b": ["乙一", "乙一"],
            "score": [1.0, 0.5],
            "notes": pd.array(["ok", None], dtype="string"),
        }
    ).to_parquet(pairs)
    filled = tmp_path / "filled.csv"
    rows = {
        "pair_id": ["e1"],
        "id_a": ["7"],
        "id_b": ["8"],
        "text_a": ["丙"],
        "text_b": ["丁"],
        "score": ["0"],
    }
    pd.DataFrame(rows).to_csv(filled, index=False)
    merge_annotations(filled, pairs, log=lambda _: None)
    back = pd.read_parquet(pairs)
    assert back["id_a"].tolist()[1:] == [2, 7] and back["id_a"].isna().tolist() == [True, False, False]
    assert back["notes"].isna().tolist() == [False, True, True]
    pd.DataFrame({**rows, "pair_id": ["e2"], "id_a": ["007"], "text_a": ["戊"]}).to_csv(filled, index=False)
    merge_annotations(filled, pairs, log=lambda _: None)
    assert pd.read_parquet(pairs)["id_a"].tolist()[1:] == ["2", "7", "007"]


def test_merge_into_a_parquet_pair_file_whose_scores_are_text(tmp_path: Path) -> None:
    pairs = tmp_path / "pairs.parquet"
    pd.DataFrame(
        {"pair_id": ["p1"], "split": ["train"], "text_a": ["甲"], "text_b": ["乙"], "score": ["0.5"]}
    ).to_parquet(pairs)
    filled = tmp_path / "filled.csv"
    pd.DataFrame({"pair_id": ["e1"], "text_a": ["丙"], "text_b": ["丁"], "score": ["0.75"]}).to_csv(
        filled, index=False
    )
    merge_annotations(filled, pairs, log=lambda _: None)
    assert load_pairs(pairs)["score"].tolist() == [0.5, 0.75]


# --- what a merge takes from an editors' file: texts as exported, ids with their own texts ------------------

FORMULA = '=HYPERLINK("http://evil.example/","x")'


def _sha(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _export(tmp_path: Path, rows: list[dict[str, str]], hashes: bool = True) -> Path:
    """An editors' file as the page exports it: COLUMNS, then sha256_a/sha256_b of the original texts."""
    frame = pd.DataFrame([{c: "" for c in editor_file.COLUMNS} | r for r in rows])
    frame = (
        frame[[*editor_file.COLUMNS, "sha256_a", "sha256_b"]] if hashes else frame[list(editor_file.COLUMNS)]
    )
    path = tmp_path / "export.csv"
    frame.to_csv(path, index=False)
    return path


def _row(id_a: str, id_b: str, text_a: str, text_b: str, score: str = "1", **more: str) -> dict[str, str]:
    return {"id_a": id_a, "id_b": id_b, "text_a": text_a, "text_b": text_b, "score": score} | more


def test_an_apostrophe_escaped_cell_is_merged_without_its_apostrophe(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    """The export writes a text a spreadsheet would run as a formula with an apostrophe in front (as
    pairs.csv does); the merge stores the text itself, with or without the hash columns."""
    _, pairs = files
    for hashes, day in ((True, "Monday"), (False, "Tuesday")):
        a, b = ("z1", "z2") if hashes else ("z3", "z4")
        text_a, text_b = f"{FORMULA} {day}", f"-5% on {day}"
        row = _row(a, b, "'" + text_a, "'" + text_b, notes="'=1+1", annotator="'@desk")
        path = _export(tmp_path, [row | {"sha256_a": _sha(text_a), "sha256_b": _sha(text_b)}], hashes)
        merge_annotations(path, pairs, log=lambda _: None)
    merged = load_pairs(pairs)
    new = merged.iloc[2:]
    assert new["text_a"].tolist() == [f"{FORMULA} Monday", f"{FORMULA} Tuesday"]
    assert new["text_b"].tolist() == ["-5% on Monday", "-5% on Tuesday"]
    assert new["notes"].tolist() == ["=1+1", "=1+1"] and new["annotator"].tolist() == ["@desk", "@desk"]


def test_a_text_that_begins_with_an_apostrophe_of_its_own_is_kept_when_the_hash_says_so(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    _, pairs = files
    own = "'=Quoted, the item's own title"  # the export does not escape it (it begins with an apostrophe)
    path = _export(tmp_path, [_row("z1", "z2", own, "乙") | {"sha256_a": _sha(own), "sha256_b": _sha("乙")}])
    merge_annotations(path, pairs, log=lambda _: None)
    assert load_pairs(pairs)["text_a"].iloc[-1] == own


@pytest.mark.slow
@pytest.mark.parametrize("field", ["text_a", "text_b"])
def test_a_text_changed_after_the_export_is_refused_by_its_hash(
    files: tuple[Path, Path], tmp_path: Path, field: str
) -> None:
    """A spreadsheet that ran the formula saves its value ("x"): the hash of the exported text names the
    change, by file, row and field; the pair file is unchanged."""
    _, pairs = files
    before = pairs.read_bytes()
    ok = _row("z1", "z2", "甲", "乙") | {"sha256_a": _sha("甲"), "sha256_b": _sha("乙")}
    bad = _row("z3", "z4", "丙", "丁") | {"sha256_a": _sha("丙"), "sha256_b": _sha("丁")}
    bad[field] = "x"
    path = _export(tmp_path, [ok, bad])
    line = refused(
        nlsim("annotate", "merge", "--filled", path, "--pairs", pairs, cwd=tmp_path),
        "sha256",
        command="annotate",
        alone=True,
    )
    assert f"sheet row 3, field '{field}'" in line and str(path.name) in line
    assert pairs.read_bytes() == before


@pytest.mark.slow
def test_a_text_other_than_the_corpus_text_of_its_item_is_refused(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    """Without hash columns the corpus (``--corpus``) knows each item's text: a text that differs (a
    formula's value "x" for a title) is refused by row and field."""
    corpus, pairs = files
    before = pairs.read_bytes()
    path = _export(
        tmp_path, [_row("n02", "n05", TITLES[2], TITLES[5]), _row("n06", "n07", "x", TITLES[7])], False
    )
    line = refused(
        nlsim("annotate", "merge", "--filled", path, "--pairs", pairs, "--corpus", corpus, cwd=tmp_path),
        "n06",
        command="annotate",
        alone=True,
    )
    assert "sheet row 3, field 'text_a'" in line and "corpus" in line
    assert pairs.read_bytes() == before
    fine = _export(tmp_path, [_row("n02", "n05", TITLES[2], TITLES[5])], False)
    proc = nlsim("annotate", "merge", "--filled", fine, "--pairs", pairs, "--corpus", corpus, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.slow
@pytest.mark.parametrize("where", ["corpus", "pair file"])
def test_swapped_ids_with_their_texts_in_place_are_refused(
    files: tuple[Path, Path], tmp_path: Path, where: str
) -> None:
    """The pair id is the same in either order, so a row whose id_a and id_b were swapped (texts left in
    place) must be caught by comparing each id with its text, wherever the item's text is known."""
    corpus, pairs = files
    before = pairs.read_bytes()
    a, b = ("n07", "n08") if where == "corpus" else ("n00", "n06")  # n00 is in the pair file
    ta, tb = TITLES[int(a[1:])], TITLES[int(b[1:])]
    path = _export(tmp_path, [_row(b, a, ta, tb) | {"sha256_a": _sha(ta), "sha256_b": _sha(tb)}])
    more = ["--corpus", corpus] if where == "corpus" else []
    line = refused(
        nlsim("annotate", "merge", "--filled", path, "--pairs", pairs, *more, cwd=tmp_path),
        "swapped",
        command="annotate",
        alone=True,
    )
    assert "sheet row 2" in line
    assert pairs.read_bytes() == before


@pytest.mark.parametrize("column", ["id_a", "id_b"])
def test_an_editors_file_id_holding_a_control_character_is_refused(
    files: tuple[Path, Path], tmp_path: Path, column: str
) -> None:
    _, pairs = files
    before = pairs.read_bytes()
    rows = [_row("z1", "z2", "甲", "乙"), _row("z3", "z4", "丙", "丁")]
    rows[1][column] = "z\x1f9"
    path = _export(tmp_path, rows, hashes=False)
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=lambda _: None)
    assert (err.value.row, err.value.field) == (3, column) and "U+001F" in err.value.reason
    assert pairs.read_bytes() == before


@pytest.mark.parametrize("fmt", ["tsv", "csv"])
@pytest.mark.parametrize("ch", ["\x0b", "\x07", "\x1b", "\u2028", "\x0c", "\x85"])
def test_a_cell_a_line_reader_would_split_or_a_control_character_is_refused(
    files: tuple[Path, Path], tmp_path: Path, fmt: str, ch: str
) -> None:
    """docs/finetuning.md: a cell holding a control character or a line separator (U+2028, a vertical tab
    from a slide) is refused by row and field. The merge does as the docs say, for TSV and CSV pair files."""
    _, tsv = files
    pairs = tsv
    if fmt == "csv":
        pairs = tmp_path / "pairs.csv"
        pd.read_csv(tsv, sep="\t", dtype=str, keep_default_na=False).to_csv(pairs, index=False)
    before = pairs.read_bytes()
    for column in ("text_b", "notes"):
        rows = [_row("z1", "z2", "甲", "乙"), _row("z3", "z4", "丙", "丁", notes="ok")]
        rows[1][column] = f"Storm{ch}update"
        path = _export(tmp_path, rows, hashes=False)
        with pytest.raises(InputError) as err:
            merge_annotations(path, pairs, log=lambda _: None)
        assert (err.value.row, err.value.field) == (3, column), err.value
        assert f"U+{ord(ch):04X}" in err.value.reason
        assert pairs.read_bytes() == before


def test_a_merge_killed_before_its_rename_leaves_nothing_the_next_merge_keeps(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    """A merge killed between writing and renaming leaves a full hidden copy beside the pair file (one
    ``git add -A`` from a commit): the next merge into that file removes it."""
    _, pairs = files
    litter = pairs.parent / f".{pairs.name}.k3x_9a2b.tmp.tsv"
    litter.write_bytes(pairs.read_bytes() + b"half a row")
    path = _filled(tmp_path, ["0.5"])
    merge_annotations(path, pairs, log=lambda _: None)
    assert not litter.exists()
    assert not [p.name for p in pairs.parent.iterdir() if p.name.startswith(f".{pairs.name}")]


def _drawn(tmp_path: Path, titles: list[str], n: int) -> tuple[Path, Path, Path]:
    """A corpus of ``titles`` (ids f0, f1, ...), a pair file of one pair of other items, and ``n`` pairs drawn
    from them to ``todo.csv`` (TF-IDF, no conversion): the corpus, the pair file and the drawn file."""
    corpus = tmp_path / "corpus.parquet"
    pd.DataFrame({"id": [f"f{i}" for i in range(len(titles))], "title": titles}).to_parquet(corpus)
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore\tsplit\np1\tz1\tz2\tA\tB\t1\ttrain\n")
    out = tmp_path / "todo.csv"
    draw_candidates(
        corpus, pairs, out, n=n, scorer="tfidf-char2", conversion="none", threshold=0.3, log=print
    )
    return corpus, pairs, out


def test_a_drawn_file_keeps_a_formula_title_as_text_and_the_merge_stores_the_title(tmp_path: Path) -> None:
    """The drawn editors' file is opened in a spreadsheet too: a title beginning with ``=``, ``+``, ``-``
    or ``@`` is written with an apostrophe in front (as pairs.csv and the page's export are), and the
    merge stores the title itself."""
    titles = [
        FORMULA,
        FORMULA + " again",
        "-5% on Monday",
        "-5% on Monday again",
        "@desk news",
        "@desk news 2",
    ]
    corpus, pairs, out = _drawn(tmp_path, titles, n=3)
    todo = pd.read_csv(out, dtype=str, keep_default_na=False)
    cells = [*todo["text_a"], *todo["text_b"]]
    assert cells and all(c.startswith("'") and c[1:] in titles for c in cells), cells
    todo["score"] = "1"
    todo.to_csv(out, index=False)
    merge_annotations(out, pairs, corpus=corpus, log=lambda _: None)
    merged = load_pairs(pairs).iloc[1:]
    assert set(merged["text_a"]) | set(merged["text_b"]) <= set(titles)


def test_a_drawn_title_holding_a_separator_cannot_start_a_formula_cell_and_merges_back(
    tmp_path: Path,
) -> None:
    """A title's ``;`` or tab stays inside its quoted cell where a spreadsheet splits on it (Excel with a
    ``;`` list separator), as in the page's export; the filled file merges the titles themselves."""
    from nlsim.report.spreadsheet import FORMULA_START
    from tests.report.test_spreadsheet import cells_as_a_spreadsheet_splits

    titles = ["Markets rally;=1+1", "Markets rally;=1+1 again", "Storm\t@SUM(1;1)", "Storm\t@SUM(1;1) again"]
    corpus, pairs, out = _drawn(tmp_path, titles, n=2)
    lines = out.read_text(encoding="utf-8-sig").splitlines()
    assert len(lines) > 1
    for separator in (",", ";", "\t"):
        for line in lines:
            for cell in cells_as_a_spreadsheet_splits(line, separator):
                assert not cell.startswith(FORMULA_START), (separator, line, cell)
    todo = pd.read_csv(out, dtype=str, keep_default_na=False)
    todo["score"] = "1"
    todo.to_csv(out, index=False)
    merge_annotations(out, pairs, corpus=corpus, log=lambda _: None)
    merged = load_pairs(pairs).iloc[1:]
    spaced = {" ".join(t.split()) for t in titles}  # the pair file holds a tab as a space
    assert len(merged) and set(merged["text_a"]) | set(merged["text_b"]) <= spaced


def test_merge_names_every_conflict_at_once_and_skip_scored_merges_the_rest(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    """Two rows of a file repeat annotated pairs: one refusal names both (file, row, field); with
    --skip-scored the third row is merged, the two are counted, and the verdict store beside the pair file
    holds every merged pair with its split."""
    _, pairs = files
    again = tmp_path / "again.csv"
    pd.DataFrame(
        {
            "id_a": ["n00", "n08", "n04"],
            "id_b": ["n01", "n09", "n03"],
            "text_a": [TITLES[0], TITLES[8], TITLES[4]],
            "text_b": [TITLES[1], TITLES[9], TITLES[3]],
            "score": ["1", "0.75", "0"],
            "annotator": ["ed", "ed", "ed"],
        }
    ).to_csv(again, index=False)
    before = pairs.read_bytes()
    with pytest.raises(InputError) as refused:
        merge_annotations(again, pairs, log=lambda _: None)
    text = str(refused.value)
    assert f"{again}: sheet row 2, field " in text and f"{again}: sheet row 4, field " in text, text
    assert "sheet row 3" not in text and "--skip-scored" in text
    assert pairs.read_bytes() == before  # refused: the pair file as it was
    assert not (tmp_path / "pairs.tsv.verdicts.csv").exists()

    said: list[str] = []
    res = merge_annotations(again, pairs, skip_scored=True, log=said.append)
    assert (res.added, res.skipped_scored) == (1, 2)
    assert "2 already annotated skipped" in said[0]
    merged = load_pairs(pairs)
    assert len(merged) == 3 and merged["id_a"].tolist()[-1] == "n08"

    from nlsim.clusters.verdicts import load_verdicts, store_path

    assert res.verdicts == store_path(pairs) == tmp_path / "pairs.tsv.verdicts.csv"
    verdicts = load_verdicts(res.verdicts)
    assert [(v.id_a, v.id_b, v.score, v.split, v.annotator) for v in verdicts.records] == [
        ("n08", "n09", 0.75, "train", "ed")
    ]
    assert verdicts.constraints().forbids("n09", "n08")


@pytest.mark.slow
def test_merge_cli_lists_every_conflict_and_skips_scored(files: tuple[Path, Path], tmp_path: Path) -> None:
    _, pairs = files
    again = tmp_path / "again.csv"
    pd.DataFrame(
        {
            "id_a": ["n00", "n04", "n10"],
            "id_b": ["n01", "n03", "n11"],
            "text_a": [TITLES[0], TITLES[4], TITLES[10]],
            "text_b": [TITLES[1], TITLES[3], TITLES[11]],
            "score": ["1", "0.75", "1"],
        }
    ).to_csv(again, index=False)
    cmd = ["annotate", "merge", "--filled", str(again), "--pairs", str(pairs)]
    bad = nlsim(*cmd, cwd=tmp_path, plain=True)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert "sheet row 2, field " in bad.stderr and "sheet row 3, field " in bad.stderr, bad.stderr
    ok = nlsim(*cmd, "--skip-scored", cwd=tmp_path, plain=True)
    assert ok.returncode == 0, ok.stderr
    said = ok.stderr + ok.stdout
    assert "added 1 pair to " in said and "(0 blank rows skipped, 2 already annotated skipped)" in said


def test_merge_names_a_text_conflict_together_with_every_other_conflict(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    """A text that differs from its item's known text does not hide the other problems of the file: the
    already annotated pair, a second text conflict and an id the corpus does not hold are named in the
    same refusal, each by row and field."""
    corpus, pairs = files
    before = pairs.read_bytes()
    path = _export(
        tmp_path,
        [
            _row("n00", "n01", TITLES[0], TITLES[1]),  # annotated already
            _row("n06", "n07", "x", TITLES[7]),  # n06 has another text in the corpus
            _row("n08", "n09", TITLES[8], "y"),  # so has n09
            _row("n10", "nosuch", TITLES[10], "z"),  # not in the corpus
        ],
        False,
    )
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, corpus=corpus, log=lambda _: None)
    text = str(err.value)
    rows = ("sheet row 2, field ", "sheet row 3, field 'text_a'", "sheet row 4, field 'text_b'")
    for where in (*rows, "sheet row 5, field 'id_b'"):
        assert where in text, text
    assert "'nosuch' is neither in the pair file nor in the corpus" in text
    assert pairs.read_bytes() == before
    assert not (tmp_path / "pairs.tsv.verdicts.csv").exists()


def test_bad_scores_and_repeated_pairs_are_named_at_once(files: tuple[Path, Path], tmp_path: Path) -> None:
    _, pairs = files
    path = _filled(tmp_path, ["0.3", "1", "abc", "0.5"], pair_id=["e0", "e1", "e2", "e1"])
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=lambda _: None)
    text = str(err.value)
    assert "sheet row 2, field 'score'" in text and "sheet row 4, field 'score'" in text, text
    assert "sheet row 5, field 'pair_id'" in text and "duplicate pair id 'e1' (first at sheet row 3)" in text


def test_a_verdict_store_that_cannot_be_read_refuses_the_merge_before_the_pair_file_changes(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    """The store is read before anything is written: a damaged one refuses the merge and the pair file
    stays byte for byte; once the store is mended the same file merges, into both."""
    _, pairs = files
    store = tmp_path / "pairs.tsv.verdicts.csv"
    store.write_text(
        "pair_id,id_a,id_b,score,split,annotator,source,decided_at\n,z1,z2,0.3,train,,,\n", encoding="utf-8"
    )
    before = pairs.read_bytes()
    path = _export(tmp_path, [_row("n06", "n07", TITLES[6], TITLES[7], "0")], False)
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=lambda _: None)
    assert err.value.file == str(store) or str(store) in str(err.value)
    assert pairs.read_bytes() == before
    store.unlink()
    res = merge_annotations(path, pairs, log=lambda _: None)
    from nlsim.clusters.verdicts import load_verdicts

    assert res.added == 1 and load_verdicts(store).constraints().forbids("n06", "n07")


def test_a_pair_file_the_merge_cannot_write_leaves_the_verdict_store_as_it_was(
    files: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nlsim.annotation import merge
    from nlsim.clusters.verdicts import load_verdicts

    _, pairs = files
    merge_annotations(_export(tmp_path, [_row("n06", "n07", TITLES[6], TITLES[7], "0")], False), pairs)
    store = tmp_path / "pairs.tsv.verdicts.csv"
    kept, before = store.read_bytes(), pairs.read_bytes()

    def fail(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(merge, "write_checked", fail)
    with pytest.raises(OSError, match="disk full"):
        merge_annotations(_export(tmp_path, [_row("n08", "n09", TITLES[8], TITLES[9], "1")], False), pairs)
    assert store.read_bytes() == kept and pairs.read_bytes() == before
    assert len(load_verdicts(store)) == 1


def test_a_symlinked_pair_file_keeps_its_verdicts_beside_the_file_it_links_to(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    """The merge rewrites the link's target; its verdicts go beside that file, where a report given either
    path finds them; a store kept beside the link before is read too, and moved into it by the next
    merge."""
    from nlsim.clusters.verdicts import store_path
    from nlsim.dedup.editors import read_editors

    _, pairs = files
    (tmp_path / "ann").mkdir()
    link = tmp_path / "ann" / "pairs.tsv"
    link.symlink_to(pairs)
    res = merge_annotations(_export(tmp_path, [_row("n06", "n07", TITLES[6], TITLES[7], "0")], False), link)
    assert res.verdicts == store_path(link) == store_path(pairs) == tmp_path / "pairs.tsv.verdicts.csv"
    assert link.is_symlink() and not (tmp_path / "ann" / "pairs.tsv.verdicts.csv").exists()
    for given in (link, pairs):
        assert read_editors(given, None).constraints().cannot_link == frozenset({("n06", "n07")})
    # a store an earlier nlsim kept beside the link (named after the stem) is still read for the pairs the
    # pair file holds, and folded into the store at the next merge, which then removes it
    earlier = tmp_path / "ann" / "pairs.verdicts.csv"
    earlier.write_text(
        "pair_id,id_a,id_b,score,split,annotator,source,decided_at\n,n00,n01,1,train,,,\n", encoding="utf-8"
    )
    assert read_editors(link, None).constraints().must_link == frozenset({("n00", "n01")})
    merge_annotations(_export(tmp_path, [_row("n08", "n09", TITLES[8], TITLES[9], "0")], False), link)
    got = read_editors(pairs, None).constraints()
    assert got.cannot_link == {("n06", "n07"), ("n08", "n09")} and got.must_link == {("n00", "n01")}
    assert not earlier.exists()


def test_a_merge_names_every_problem_of_the_file_in_one_refusal_by_sheet_row(
    files: tuple[Path, Path], tmp_path: Path
) -> None:
    """One refusal names every problem, whatever check finds it (the file's own: a blank score, a score off
    the rubric, an item paired with itself, an id given two texts, a pair id twice; a cell the TSV pair file
    cannot hold; the conflicts with the pair file): the editor fixes the file once. Rows are named as a
    spreadsheet shows the file: the header is sheet row 1."""
    _, pairs = files
    frame = pd.DataFrame(
        {
            "pair_id": ["e1", "e2", "e3", "e4", "e5", "e1", "e7", "e8", "e9"],
            "id_a": ["z1", "z3", "z5", "z7", "z1", "z9", "n00", "z11", "n04"],
            "id_b": ["z2", "z4", "z5", "z8", "z10", "z20", "n01", "z12", "z13"],
            "text_a": ["甲", "丙", "戊", "庚", "甲?", "壬", TITLES[0], "子", "not n04's text"],
            "text_b": ["乙", "丁", "己", "辛", "癸", "丑", TITLES[1], "tab\there", "寅"],
            "score": ["1", "", "0.6", "0", "0.5", "1", "1", "0", "0.25"],
        }
    )
    path = tmp_path / "filled.csv"
    frame.to_csv(path, index=False)
    before = pairs.read_bytes()
    with pytest.raises(InputError) as err:
        merge_annotations(path, pairs, log=lambda _: None)
    text = str(err.value)
    expected = {
        3: ("score", "not scored"),
        4: ("score", "is not one of the rubric's levels"),
        6: ("text_a", "has another text than at sheet row 2"),
        7: ("pair_id", "duplicate pair id 'e1' (first at sheet row 2)"),
        8: ("", "is already annotated in"),  # named on id_a or text_a: the ids and the texts both repeat
        9: ("text_b", "cannot be written to the TSV pair file"),
        10: ("text_a", "has another text than in"),
    }
    for row, (field, words) in expected.items():
        line = next((ln for ln in text.splitlines() if f"sheet row {row}, field '{field}" in ln), None)
        assert line is not None and words in line, (row, field, text.splitlines())
    assert "sheet row 4, field 'id_b': item 'z5' is paired with itself" in text  # beside its score
    assert text.splitlines()[0] == (
        f"{path}: {len(expected) + 1} problems, each to fix in the file (1 already annotated: pass "
        "--skip-scored to merge the others (these kept nowhere), or --overrule to merge the 1 training "
        "pair(s) among them as the editor's newer decision):"
    )
    assert "sheet row 2," not in text and "sheet row 5," not in text  # the sound rows
    assert pairs.read_bytes() == before


def test_a_filled_file_the_reader_refuses_is_named_by_its_sheet_row(tmp_path: Path) -> None:
    """An editors' file saved as GB18030, or with a row of another number of fields: the row named as the
    file's every other problem is, by the sheet row a spreadsheet shows (the header is sheet row 1)."""
    from nlsim.annotation.validate import read_filled

    head = "pair_id,id_a,id_b,text_a,text_b,score\np1,a,b,Floods,Floods hit,1\np2,c,d,Storm,Storm hits,0.5\n"
    (tmp_path / "gb.csv").write_bytes((head + "p3,e,f,股市大跌,股市下跌,0\n").encode("gb18030"))
    with pytest.raises(
        InputError, match=r"gb\.csv: sheet row 4, field 'text_a': not valid UTF-8 text: .*\(line 4\)"
    ):
        read_filled(tmp_path / "gb.csv")
    (tmp_path / "wide.csv").write_text(head + "p3,e,f,Rain,Rain falls,0,extra\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"wide\.csv: sheet row 4: 7 fields, the header has 6"):
        read_filled(tmp_path / "wide.csv")


@pytest.mark.parametrize(
    "score,expected",
    [
        ("０．７５", None),
        ("　１　", None),
        ("0,75", "a decimal comma? write it 0.75"),
        ("75%", "a percentage"),
    ],
)
def test_a_filled_score_in_full_width_characters_is_read_and_a_decimal_comma_is_named(
    tmp_path: Path, score: str, expected: str | None
) -> None:
    """An editor typing with a Chinese input method in full-width mode writes '０．７５': refused as "not a
    number" (where '０.７５' was read); a decimal comma or a percentage was "not a number" alone, not said
    how to write it. The full-width score is now read as the pair file reads it, and the others say so."""
    from nlsim.annotation.validate import read_filled, validate_filled

    text = "pair_id,id_a,id_b,text_a,text_b,score\np1,a,b,Floods,Floods hit,1\n"
    text += f'p2,c,d,Storm,Storm hits,"{score}"\n'
    (tmp_path / "marks.csv").write_text(text, encoding="utf-8")
    frame = read_filled(tmp_path / "marks.csv")
    if expected is None:
        assert validate_filled(frame, tmp_path / "marks.csv")["score"].tolist() == [
            1.0,
            0.75 if "５" in score else 1.0,
        ]
        return
    words = rf"sheet row 3, field 'score': score '{score}' is not a number \(.*{re.escape(expected)}"
    with pytest.raises(InputError, match=words):
        validate_filled(frame, tmp_path / "marks.csv")


def test_a_filled_text_misread_as_gb18030_and_saved_again_is_refused_by_sheet_row(tmp_path: Path) -> None:
    """A drawn file opened in Excel on a Simplified-Chinese Windows without its byte-order mark shows
    '棰遍ⅷ…' for '颱風…' and saves it as UTF-8: merged without --corpus, the misread texts went into the
    training pairs with exit status 0. The merge refuses the row by sheet row and field, and the pair file
    is left as it was."""
    from nlsim.annotation.merge import merge_annotations

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("pair_id\tsplit\ttext_a\ttext_b\tscore\np0\ttrain\tA\tB\t1\n", encoding="utf-8")
    before = pairs.read_bytes()
    misread = "颱風凱米今晚登陸 全台停班停課".encode().decode("gb18030")
    filled = tmp_path / "marks.csv"
    filled.write_text(
        f"id_a,id_b,text_a,text_b,score\nz1,z2,{misread},颱風過後 全台停班停課,1\n", encoding="utf-8"
    )
    with pytest.raises(InputError, match=r"sheet row 2, field 'text_a': the text .* misread as gb18030"):
        merge_annotations(filled, pairs)
    assert pairs.read_bytes() == before


def test_a_filled_file_saved_as_excels_unicode_text_under_a_csv_name_is_named_utf16(tmp_path: Path) -> None:
    """Excel's "Unicode Text" is UTF-16, tab-separated: renamed .csv, it was refused as "separated by tabs
    ... save it as comma-separated CSV", its first line read with each NUL byte replaced, and an editor who
    named it .tsv as told was then refused again for its encoding. The encoding is what is named."""
    from nlsim.annotation.validate import read_filled

    text = "pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore\r\np1\ta\tb\t颱風凱米登陸\t凱米颱風登陸\t1\r\n"
    (tmp_path / "marks.csv").write_bytes(text.encode("utf-16"))
    with pytest.raises(InputError, match=r"marks\.csv: a UTF-16 text file") as info:
        read_filled(tmp_path / "marks.csv")
    assert "separated by tabs" not in str(info.value)


@pytest.mark.parametrize("fmt", ["csv", "tsv"])
def test_a_filled_row_missing_a_field_is_named_by_file_row_and_the_field_it_lacks(
    tmp_path: Path, fmt: str
) -> None:
    """A row of an editors' file edited by hand lost its last cell (the notes, or the overrule): the
    refusal names the file, the sheet row and the first column the row has no cell for, and the pair file
    is not touched."""
    from nlsim.annotation.merge import merge_annotations

    sep = "," if fmt == "csv" else "\t"
    head = sep.join(["pair_id", "id_a", "id_b", "text_a", "text_b", "score", "notes"]) + "\n"
    rows = sep.join(["p1", "a", "b", "Floods", "Floods hit", "1", "ok"]) + "\n"
    short = sep.join(["p2", "c", "d", "Storm", "Storm hits", "0.5"]) + "\n"
    filled = tmp_path / f"short.{fmt}"
    filled.write_text(head + rows + short, encoding="utf-8")
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("pair_id\tid_a\tid_b\ttext_a\ttext_b\tscore\tsplit\n", encoding="utf-8")
    before = pairs.read_bytes()
    with pytest.raises(
        InputError, match=r"short\.(csv|tsv): sheet row 3, field 'notes': 6 fields, the header has 7"
    ):
        merge_annotations(filled, pairs, log=lambda _: None)
    assert pairs.read_bytes() == before


@pytest.mark.parametrize("fmt", ["tsv", "csv"])
def test_a_note_typed_on_two_lines_is_merged_as_one_line(
    files: tuple[Path, Path], tmp_path: Path, fmt: str
) -> None:
    """A note typed in a spreadsheet with Alt+Enter holds a line break: the merge refused the whole file for
    it ("remove it") when the pair file is TSV. A note is free text: a TSV pair file (one line a row) takes
    each run of white space holding a tab or a line break as one space, and the merge says so; a CSV pair
    file keeps the note as typed."""
    _, pairs = files
    if fmt == "csv":
        csv_pairs = tmp_path / "pairs.csv"
        pd.read_csv(pairs, sep="\t", dtype=str, keep_default_na=False).to_csv(csv_pairs, index=False)
        pairs = csv_pairs
    rows = [
        _row("z1", "z2", "甲", "乙", notes="first line\nsecond line"),
        _row("z3", "z4", "丙", "丁", notes="a \r\n b\tc"),
    ]
    said: list[str] = []
    merge_annotations(_export(tmp_path, rows, hashes=False), pairs, log=said.append)
    merged = read_table(pairs)
    if fmt == "tsv":
        assert merged["notes"].tolist()[-2:] == ["first line second line", "a b c"]
        assert any("2 note(s)" in line and "one space" in line for line in said), said
    else:
        assert merged["notes"].tolist()[-2:] == ["first line\nsecond line", "a \r\n b\tc"]


def test_ids_a_spreadsheet_saved_without_their_leading_zeros_are_merged_as_the_pair_id_says(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An editor scores a drawn file in Excel, which reads the ids ``002`` and ``007`` as the numbers 2 and 7
    whatever the quotes, and saves them so: each row was refused as a sheet sorted by some columns only.
    The row's pair id is that of the ids as drawn (:func:`nlsim.io.editor_file.pair_id`), so the merge
    reads them so, and says so; an id the pair id does not prove stays refused."""
    import logging

    pairs = tmp_path / "pairs.csv"
    pairs.write_text(
        "pair_id,id_a,id_b,text_a,text_b,score,split\nx1,001,003,Floods hit,Markets fall,0,train\n",
        encoding="utf-8",
    )
    rows = [
        _row("2", "7", "Floods again", "Bridge opens", "0", pair_id=editor_file.pair_id("002", "007")),
        _row("4", "0012", "Markets fall", "Cup won", "0", pair_id=editor_file.pair_id("004", "0012")),
    ]
    with caplog.at_level(logging.WARNING, logger="nlsim"):
        merge_annotations(_export(tmp_path, rows, hashes=False), pairs, log=lambda _: None)
    merged = load_pairs(pairs)
    assert merged[["id_a", "id_b"]].astype(str).values.tolist()[1:] == [["002", "007"], ["004", "0012"]]
    assert "leading zeros" in caplog.text and "'2' as '002'" in caplog.text
    wrong = [_row("5", "8", "Storm", "Rain", "0", pair_id=editor_file.pair_id("05", "9"))]
    with pytest.raises(
        InputError, match=r"sheet row 2, field 'pair_id': pair id .* is not the id of its items"
    ):
        merge_annotations(_export(tmp_path, wrong, hashes=False), pairs, log=lambda _: None)


def test_an_editors_file_holding_replacement_characters_is_warned_of_by_sheet_row(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An editors' filled file whose text holds U+FFFD (bytes a decoder could not read) was merged without a
    word; it now warns, naming the file, the sheet row and the field, and keeps the row."""
    from nlsim.annotation.validate import validate_filled

    frame = pd.DataFrame(
        {
            "pair_id": ["x1", "x2"],
            "id_a": ["a", "c"],
            "id_b": ["b", "d"],
            "text_a": ["甲", "丙"],
            "text_b": ["乙", "丁\ufffd"],
            "score": ["0.75", "0"],
        }
    )
    with caplog.at_level("WARNING", logger="nlsim"):
        kept = validate_filled(frame, tmp_path / "filled.csv")
    assert len(kept) == 2
    assert f"{tmp_path / 'filled.csv'}: 1 row(s) hold U+FFFD" in caplog.text
    assert "sheet row 3 (text_b)" in caplog.text


def test_a_merge_into_a_pair_file_with_a_column_spelt_otherwise_is_refused_before_writing(
    tmp_path: Path,
) -> None:
    """A pair file whose ``split`` column was named ``Split`` was merged into: the new rows went into a new
    ``split`` column beside it, the old rows' splits left unread. It is refused naming the column, the
    file unchanged."""
    target = tmp_path / "pairs.tsv"
    target.write_text(
        "pair_id\tSplit\tid_a\tid_b\ttext_a\ttext_b\tscore\np1\ttrain\tn1\tn2\ta\tb\t0.5\n", encoding="utf-8"
    )
    before = target.read_bytes()
    filled = tmp_path / "filled.csv"
    filled.write_text("id_a,id_b,text_a,text_b,score\nn3,n4,c,d,1\n", encoding="utf-8")
    with pytest.raises(InputError) as err:
        merge_annotations(filled, target, split="train", log=lambda _: None)
    assert err.value.field == "Split" and "spelt otherwise" in err.value.reason
    assert "read back" not in str(err.value)
    assert target.read_bytes() == before
