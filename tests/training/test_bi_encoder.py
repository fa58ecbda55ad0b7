"""Fine-tuning with the small English model on a few dozen STS-B pairs."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from stsb_helpers import stsb_sample

import nlsim.training.bi_encoder
from nlsim.evaluation.metrics import Metrics
from nlsim.training.bi_encoder import train_encoder
from nlsim.training.config import FinetuneConfig, epochs_on_any_cpu
from nlsim.training.finetune import finetune

FAST_MODEL = "paraphrase-MiniLM-L3-v2"


@pytest.fixture(scope="module")
def small_pairs() -> pd.DataFrame:
    return stsb_sample(train=32, validation=16, test=16)


def cfg(**kw: object) -> FinetuneConfig:
    base = dict(
        model=FAST_MODEL,
        conversion="none",
        epochs=2,
        batch_size=8,
        lr=5e-5,
        max_length=48,
        out=None,
        eval_test=False,
        eval_before=False,
        calibrate_level=None,
        seed=7,
        threads=1,
        log_every=0,
        reranker=False,  # tests/test_rerank.py covers it
    )
    base.update(kw)
    return FinetuneConfig.of(**epochs_on_any_cpu(base))  # type: ignore[arg-type]


def weights_hash(model: torch.nn.Module) -> str:
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().float().numpy().tobytes())
    return h.hexdigest()


def test_loss_decreases(small_pairs: pd.DataFrame) -> None:
    res = finetune(cfg(epochs=4, lr=1e-4, loss="mse"), pairs=small_pairs, log=lambda _: None)
    losses = [h["train_loss"] for h in res.history]
    assert losses[-1] < losses[0]
    assert res.steps == 4 * 4


def test_best_checkpoint_is_the_one_kept(small_pairs: pd.DataFrame, monkeypatch: pytest.MonkeyPatch) -> None:
    from nlsim.encoders import load_encoder

    enc = load_encoder(FAST_MODEL)
    scripted = iter([40.0, 90.0, 60.0, 55.0])  # the 2nd validation is the best
    seen: list[str] = []

    def fake_evaluate(scorer, pairs, conversion=None):  # noqa: ANN001, ANN202
        seen.append(weights_hash(enc.model))
        scorer(pairs["text_a"].tolist()[:2], pairs["text_b"].tolist()[:2])  # some texts embedded
        return Metrics(spearman=next(scripted), pearson=0.0, mse=0.0, mae=0.0, n=len(pairs))

    monkeypatch.setattr(nlsim.training.bi_encoder, "evaluate", fake_evaluate)
    train = small_pairs[small_pairs["split"] == "train"]
    val = small_pairs[small_pairs["split"] == "validation"]
    out = train_encoder(enc, train, val, cfg(epochs=2, eval_every=2), log=lambda _: None)
    assert [h["spearman"] for h in out["history"]] == [40.0, 90.0, 60.0, 55.0]
    assert out["best"]["spearman"] == 90.0 and out["best"]["step"] == 4
    assert len(set(seen)) == 4  # the weights moved between validations
    assert weights_hash(enc.model) == seen[1]
    # the embeddings handed on are the kept checkpoint's, of every validation text (from the frozen part's
    # states), as the weights left give them
    kept = out["validation_embeddings"]
    assert sorted(kept) == sorted(set(val["text_a"].tolist() + val["text_b"].tolist()))
    fresh = enc.encode(list(kept), progress=False)
    assert np.allclose(np.stack(list(kept.values())), fresh, atol=1e-6)


def test_same_seed_same_run(small_pairs: pd.DataFrame) -> None:
    a = finetune(cfg(epochs=1), pairs=small_pairs, log=lambda _: None)
    b = finetune(cfg(epochs=1), pairs=small_pairs, log=lambda _: None)
    assert a.history == b.history


def test_validation_never_uses_a_runner_compiled_before_training(small_pairs: pd.DataFrame) -> None:
    """A compiled inference copy (ONNX in production) must not validate the updated weights.

    The fused AdamW step does not bump torch's version counters, so the encoder is told explicitly.
    """
    import copy

    from nlsim.encoders import load_encoder

    plain = finetune(cfg(epochs=2), pairs=small_pairs, log=lambda _: None)
    enc = load_encoder(FAST_MODEL, backend="torch")
    frozen_copy = copy.deepcopy(enc.model).eval()
    digest_before = enc.weights_digest()

    def stale_runner(input_ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            m = torch.from_numpy(mask).unsqueeze(-1).float()
            out = frozen_copy(input_ids=torch.from_numpy(input_ids), attention_mask=torch.from_numpy(mask))
            return ((out.last_hidden_state * m).sum(1) / m.sum(1).clamp(min=1e-9)).numpy()

    enc.use_runner(stale_runner)
    with_runner = finetune(cfg(epochs=2), pairs=small_pairs, encoder=enc, log=lambda _: None)
    assert with_runner.history == plain.history
    assert enc.weights_digest() != digest_before


def test_frozen_embeddings_stay_put(small_pairs: pd.DataFrame) -> None:
    from nlsim.encoders import load_encoder

    enc = load_encoder(FAST_MODEL)
    before = enc.model.get_input_embeddings().weight.detach().clone()
    layer = next(p for n, p in enc.model.named_parameters() if "encoder.layer.0" in n).detach().clone()
    train = small_pairs[small_pairs["split"] == "train"]
    val = small_pairs[small_pairs["split"] == "validation"]
    out = train_encoder(
        enc, train, val, cfg(epochs=1, freeze_embeddings=True, frozen_layers=0), log=lambda _: None
    )
    assert torch.equal(enc.model.get_input_embeddings().weight, before)
    assert not torch.equal(next(p for n, p in enc.model.named_parameters() if "encoder.layer.0" in n), layer)
    embedding_block = sum(p.numel() for p in enc.model.embeddings.parameters())  # run once, frozen
    assert out["trainable_parameters"] == out["total_parameters"] - embedding_block


def test_frozen_layers_stay_put_and_the_rest_trains(small_pairs: pd.DataFrame) -> None:
    from nlsim.encoders import load_encoder

    enc = load_encoder(FAST_MODEL)
    before = {n: p.detach().clone() for n, p in enc.model.named_parameters()}
    train = small_pairs[small_pairs["split"] == "train"]
    val = small_pairs[small_pairs["split"] == "validation"]
    out = train_encoder(enc, train, val, cfg(epochs=1, frozen_layers=2), log=lambda _: None)
    after = dict(enc.model.named_parameters())
    moved = {n for n in before if not torch.equal(before[n], after[n])}
    assert moved and all(n.startswith("encoder.layer.2.") for n in moved)
    assert out["frozen_layers"] == 2


def test_saved_model_reloads_everywhere_with_the_same_embeddings(
    small_pairs: pd.DataFrame, tmp_path: Path
) -> None:
    pairs_file = tmp_path / "pairs.tsv"
    small_pairs.to_csv(pairs_file, sep="\t", index=False)
    out = tmp_path / "model"
    res = finetune(
        cfg(
            pairs=str(pairs_file),
            out=str(out),
            epochs=1,
            eval_test=True,
            eval_before=True,
            calibrate_level=0.6,
        ),
        log=lambda _: None,
    )
    for name in (
        "modules.json",
        "1_Pooling/config.json",
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "calibration.json",
        "training.json",
        "README.md",
        "nlsim.json",
    ):
        assert (out / name).is_file(), name
    texts = ["A man is playing a guitar.", "Stocks fell sharply on Monday.", "a cat"]

    from nlsim.encoders import load_encoder

    ours = load_encoder(out).encode(texts, progress=False)

    from sentence_transformers import SentenceTransformer

    st = SentenceTransformer(str(out), device="cpu").encode(texts, normalize_embeddings=True)
    np.testing.assert_allclose(st, ours, atol=1e-5)

    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(out)
    model = AutoModel.from_pretrained(out).eval()
    with torch.no_grad():
        feats = tok(texts, padding=True, return_tensors="pt")
        hidden = model(**feats).last_hidden_state
        mask = feats["attention_mask"].unsqueeze(-1).float()
        plain = torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=1).numpy()
    np.testing.assert_allclose(plain, ours, atol=1e-5)

    card = (out / "README.md").read_text(encoding="utf-8")
    from nlsim.io.atomic import file_sha256

    assert file_sha256(pairs_file) in card
    assert "sentence-transformers/paraphrase-MiniLM-L3-v2" in card and "| seed | 7 |" in card
    assert "after fine-tuning" in card and "Calibrated threshold" in card
    assert set(res.metrics) == {"before/validation", "before/test", "after/validation", "after/test"}
    cal = json.loads((out / "calibration.json").read_text())
    assert cal["level"] == 0.6 and cal["split"] == "validation"


def test_the_training_texts_embeddings_from_the_frozen_states_are_what_the_encoder_gives(
    small_pairs: pd.DataFrame,
) -> None:
    from nlsim.encoders import load_encoder

    enc = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch")
    train = small_pairs[small_pairs["split"] == "train"]
    val = small_pairs[small_pairs["split"] == "validation"]
    settings = cfg(epochs=1, frozen_layers=1, train_precision="fp32")
    out = train_encoder(enc, train, val, settings, log=lambda _: None, embed_training_texts=True)
    kept = out["training_embeddings"]
    assert sorted(kept) == sorted(set(train["text_a"]) | set(train["text_b"]))
    fresh = enc.encode(list(kept), progress=False)
    assert np.allclose(np.stack(list(kept.values())), fresh, atol=1e-5)
    assert train_encoder(enc, train, val, settings, log=lambda _: None)["training_embeddings"] == {}


@pytest.mark.slow
@pytest.mark.parametrize("spare", [None, 1])
def test_a_bf16_training_embeds_in_bf16_only_the_texts_no_evaluation_reads(
    small_pairs: pd.DataFrame, monkeypatch: pytest.MonkeyPatch, spare: int | None
) -> None:
    """On a CPU that trains in bf16 the training texts go through the frozen part, and through the trained
    layers for the reranker's line, in bf16; a text validation or the test split reads too stays fp32. With
    a spare thread beside the training the passes run in lanes (autocast is per thread): the same holds."""
    from nlsim.encoders import load_encoder

    monkeypatch.setenv("NLSIM_DEVICE", "cpu")
    enc = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch")
    train = small_pairs[small_pairs["split"] == "train"].reset_index(drop=True)
    val = small_pairs[small_pairs["split"] == "validation"].reset_index(drop=True)
    val.loc[0, "text_a"] = train.loc[0, "text_a"]  # a training text validation reads too
    tested = str(train.loc[1, "text_b"])  # and one the test split reads
    settings = cfg(epochs=1, frozen_layers=1, train_precision="bf16")
    logged: list[str] = []
    lanes = None if spare is None else (lambda: spare)
    out = train_encoder(
        enc,
        train,
        val,
        settings,
        log=logged.append,
        embed_training_texts=True,
        evaluated={tested},
        spare=lanes,
    )
    kept = out["training_embeddings"]
    fresh = dict(zip(kept, enc.encode(list(kept), progress=False), strict=True))
    exact = set(kept) & {*val["text_a"], *val["text_b"], tested}
    assert {str(train.loc[0, "text_a"]), tested} <= exact
    for text, vector in kept.items():
        gap = float(np.abs(vector - fresh[text]).max())
        assert gap < 1e-5 if text in exact else float(vector @ fresh[text]) > 0.99, (text, gap)
    assert max(float(np.abs(kept[t] - fresh[t]).max()) for t in kept if t not in exact) > 1e-4  # bf16 ran
    said = f"({len(kept) - len(exact)} of the {len(kept)} training texts in bf16;"
    assert any(said in m for m in logged), logged


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2])
def test_spare_threads_run_the_embedding_passes_in_lanes_with_the_same_numbers(
    small_pairs: pd.DataFrame, threads: int
) -> None:
    """A thread beside the training that has nothing left to do (the side-by-side cross-encoder's before it
    begins and after its first epoch) takes batches of the frozen pass and chunks of the validation and
    training-text passes as another lane: every number the run hands on is the same whether a spare thread
    was there or not, on one training thread or more."""
    from nlsim.encoders import load_encoder

    train = small_pairs[small_pairs["split"] == "train"]
    val = small_pairs[small_pairs["split"] == "validation"]
    settings = cfg(epochs=1, frozen_layers=1, threads=threads)
    asked: list[int] = []

    def spare(n: int) -> Callable[[], int]:
        def idle() -> int:
            asked.append(n)
            return n

        return idle

    runs = []
    for given in (spare(0), spare(1)):
        enc = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch")
        runs.append(
            train_encoder(
                enc, train, val, settings, log=lambda _: None, embed_training_texts=True, spare=given
            )
        )
    alone, beside = runs
    assert asked == [0, 0, 0, 1, 1, 1]  # the frozen pass, validation's and the training texts', in each run
    assert torch.get_num_threads() == threads  # the caller's share given back after each pass
    for key in ("training_embeddings", "validation_embeddings"):
        assert alone[key].keys() == beside[key].keys()
        assert all(np.array_equal(alone[key][t], beside[key][t]) for t in alone[key])
    assert alone["best"]["spearman"] == beside["best"]["spearman"]


@pytest.mark.slow
def test_drop_easy_trains_the_second_epoch_on_the_pairs_still_off_the_line(small_pairs: pd.DataFrame) -> None:
    """From the second epoch on, the pairs whose score lies near their cosine's line leave (fewer steps),
    but for the share of them drawn; the same-story pairs stay even when every other pair leaves; without
    a margin nothing leaves."""
    train = small_pairs[small_pairs["split"] == "train"]
    story = int((train["score"] >= 0.875).sum())
    assert 0 < story < len(train)
    steps, said = {}, {}
    for margin, share in ((0.0, 0.25), (0.1, 0.0), (0.99, 0.0), (0.99, 0.5)):
        lines: list[str] = []
        res = finetune(
            cfg(epochs=3, drop_easy=margin, easy_sample=share), pairs=small_pairs, log=lines.append
        )
        steps[margin, share] = res.steps
        said[margin, share] = [line for line in lines if "pairs, " in line and "bi-encoder epoch" in line]
    assert steps[0.0, 0.25] == 3 * 4 and said[0.0, 0.25] == []
    assert len(said[0.99, 0.0]) == 2
    assert all(f"epoch {e}: {story} of {len(train)} pairs" in said[0.99, 0.0][e - 2] for e in (2, 3))
    # 9 same-story pairs: 2 steps an epoch or more
    assert 4 + 2 < steps[0.99, 0.0] <= steps[0.1, 0.0] < steps[0.0, 0.25]
    assert steps[0.99, 0.0] <= steps[0.99, 0.5] <= steps[0.0, 0.25]
    assert not any(f"epoch {e}: {story} of" in said[0.99, 0.5][e - 2] for e in (2, 3))  # easy ones drawn


def test_training_from_kept_states_takes_them_and_leaves_them_as_they_were(small_pairs: pd.DataFrame) -> None:
    from nlsim.encoders import load_encoder, lower_states

    train = small_pairs[small_pairs["split"] == "train"]
    validation = small_pairs[small_pairs["split"] == "validation"]
    texts = list(dict.fromkeys(pd.concat([train, validation])[["text_a", "text_b"]].to_numpy().ravel()))
    enc = load_encoder(FAST_MODEL, backend="torch")
    logs: list[str] = []
    with lower_states.kept(enc.model, 2) as record:  # MiniLM-L3 keeps 2 of its 3 layers frozen
        enc.encode(texts, progress=False)
        before = {k: v.clone() for k, v in record.states.items()}
        train_encoder(enc, train, validation, cfg(epochs=1, max_length=128), log=logs.append)
    taken = r"(\d+) distinct texts: \1 from the states .*, 0 through the frozen part"
    assert any(re.search(taken, m) for m in logs), logs  # every text from the kept states
    assert record.states.keys() == before.keys()
    assert all(torch.equal(record.states[k], v) for k, v in before.items())  # training wrote none of them


@pytest.mark.slow
@pytest.mark.parametrize(("precision", "chunks"), [("fp32", 2), ("bf16", 1)])
def test_a_bf16_step_on_a_cpu_runs_its_batch_as_one_packed_chunk(
    small_pairs: pd.DataFrame, monkeypatch: pytest.MonkeyPatch, precision: str, chunks: int
) -> None:
    """Each chunk of a step casts every trained weight to bf16 afresh: a CPU's bf16 step takes its whole
    batch (both sides of its pairs) in one chunk; fp32 keeps chunks of the batch size."""
    from nlsim.encoders import load_encoder
    from nlsim.training.split_encoder import SplitEncoder

    calls: list[int] = []
    forward = SplitEncoder.forward_packed

    def counted(self: SplitEncoder, inputs: object, rows: list[int]) -> object:
        if torch.is_grad_enabled():  # a training step's, not a validation pass's
            calls.append(len(rows))
        return forward(self, inputs, rows)

    monkeypatch.setattr(SplitEncoder, "forward_packed", counted)
    monkeypatch.setenv("NLSIM_DEVICE", "cpu")  # a CPU's rule
    enc = load_encoder("paraphrase-MiniLM-L3-v2", backend="torch")
    train = small_pairs[small_pairs["split"] == "train"]
    val = small_pairs[small_pairs["split"] == "validation"]
    out = train_encoder(enc, train, val, cfg(epochs=1, train_precision=precision), log=lambda _: None)
    assert len(calls) == chunks * out["steps"]
    assert sum(calls) == 2 * len(train)
