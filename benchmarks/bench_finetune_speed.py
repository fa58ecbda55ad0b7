"""Fine-tuning speed: where a training step goes, and nlsim's loops beside sentence-transformers' trainers.

Two parts, on the same model (multilingual-e5-small), the same pairs (our training split, ``tw2sp``), batch
16, the word-embedding table frozen, the same torch thread count; the CPU is named in every result.

``profile`` times the phases of both of nlsim's training loops over ``--steps`` steps (after a few untimed
ones): the one-time costs (tokenising every text or pair once, running the frozen lower layers once) and,
per step, building the padded batch, the forward pass, the backward pass and the optimizer step; for the
settings of each ``--variants`` (``default``: the shipped settings; ``fp32``: the same in fp32;
``fp32-torch-masks``: fp32, packed, with torch's own dropout masks instead of
:mod:`nlsim.training.dropout`'s; ``fp32-padded``: fp32, each batch padded to its longest sequence instead of
packed (the loops before :mod:`nlsim.training.packing`); ``all-layers``: no layer frozen, fp32; ``before``:
no layer frozen, fp32, batches in random order, tokenised at each step, the unfused optimizer, padded: the
loop as it was; ``default-unpadded``: the shipped settings with the packed rows not padded to a multiple
of :data:`nlsim.training.packing.PACK_MULTIPLE` and every frozen pass in fp32, as before they were;
``default-chunked``: the shipped settings with the bi-encoder's step in chunks of 16 texts and its frozen
pass in fp32, as before a CPU's bf16 step took its batch as one chunk). Token counts per step tell what
padding costs. The bi-encoder's step runs nlsim's own ``_pooled`` in the chunks ``_chunk`` takes (the whole
batch in bf16 on a CPU, else 16 texts), and its frozen pass takes the training texts that validation or the
test split reads too in fp32, as training does.

``side-by-side`` alternates nlsim's loops (``train_encoder``, ``train_cross_encoder``, shipped settings) with
sentence-transformers' ``SentenceTransformerTrainer`` (CoSENTLoss, as nlsim's default) and
``CrossEncoderTrainer`` (BinaryCrossEntropyLoss on the graded scores, both text orders) in blocks of
``--steps`` optimizer steps, after one untimed warm-up of each, so that load from other processes hits both
alike; each block times its optimizer steps only. Prints s/step per block, medians, and the implied time per
epoch of our 1,785 training pairs (the cross-encoders read both orders: 3,570 sequences).

Results: ``benchmarks/results/finetune_speed_{profile,side-by-side}[_TAG].json`` / ``.md``. Needs
``pip install -e '.[bench]'``.

    python benchmarks/bench_finetune_speed.py profile [--steps 40] [--threads 2] [--variants V,...]
        [--loops bi-encoder,cross-encoder] [--tag T]
    python benchmarks/bench_finetune_speed.py side-by-side [--steps 20] [--rounds 2] [--threads 2] [--tag T]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))
from _common import needs_bench_extra, positive  # noqa: E402

from nlsim.io.atomic import atomic_write_text  # noqa: E402

PAIRS = ROOT / "annotations" / "thucnews_tw_pairs.tsv"
OUT = ROOT / "benchmarks" / "results" / "finetune_speed"
MODEL = "multilingual-e5-small"
BATCH = 16
VARIANTS = {
    # frozen layers, precision, bucketed batches, tokenised once, fused optimizer, packed tokens, bit masks
    "default": (4, "auto", True, True, True, True, True),
    "fp32": (4, "fp32", True, True, True, True, True),
    "fp32-torch-masks": (4, "fp32", True, True, True, True, False),
    "fp32-padded": (4, "fp32", True, True, True, False, False),
    "all-layers": (0, "fp32", True, True, True, True, True),
    "before": (0, "fp32", False, False, False, False, False),
    "default-unpadded": (4, "auto", True, True, True, True, True),
    "default-chunked": (4, "auto", True, True, True, True, True),
}
UNPADDED = {"default-unpadded"}
"""Variants as shipped before the packed rows were padded for oneDNN's kernel cache and the cross-encoder's
training pairs went through the frozen part in the training's arithmetic: packed rows unpadded, every
frozen pass in fp32."""
CHUNKED = {"default-chunked"}
"""Variants as shipped before a CPU's bf16 bi-encoder step took its batch as one packed chunk and the
training texts no evaluation reads went through the frozen part in bf16: chunks of 16 texts, the frozen
pass in fp32."""


def cpu_name() -> str:
    from nlsim.inference.cpu import cpu_info

    return cpu_info().describe()


def training_pairs() -> Any:
    from nlsim.io.pairs import load_pairs
    from nlsim.training.data import convert_pairs

    pairs = convert_pairs(load_pairs(PAIRS), "tw2sp")
    train = pairs[pairs["split"] == "train"].reset_index(drop=True)
    held = pairs[pairs["split"] != "train"]
    train.attrs["evaluated"] = {*held["text_a"], *held["text_b"]}  # kept in fp32 by a bf16 training
    return train


class Phases:
    """Seconds per named phase, summed over the timed steps."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.tokens = 0
        self.real_tokens = 0

    def add(self, name: str, t0: float) -> float:
        now = time.perf_counter()
        self.seconds[name] = self.seconds.get(name, 0.0) + now - t0
        return now


def profile_loop(kind: str, variant: str, train: Any, steps: int, threads: int) -> dict[str, Any]:
    """One loop's phases (see the module docstring), mirroring nlsim's training step."""
    import torch

    from nlsim.encoders import load_encoder
    from nlsim.encoders.batching import bucketed_batches, pad_batch
    from nlsim.encoders.encoder import mean_pool
    from nlsim.rerank.cross_encoder import CrossEncoder
    from nlsim.training import split_encoder as split_module
    from nlsim.training.bi_encoder import _chunk as step_chunk
    from nlsim.training.bi_encoder import _pooled as pooled_rows
    from nlsim.training.losses import cosent_loss
    from nlsim.training.mixed_precision import autocast, resolve
    from nlsim.training.optim import adamw
    from nlsim.training.packing import segment_mean
    from nlsim.training.split_encoder import SplitEncoder

    frozen, setting, bucketed, once, fused, packed, bits = VARIANTS[variant]
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    one_time: dict[str, float] = {}
    if kind == "bi-encoder":
        enc = load_encoder(MODEL, backend="torch")
        model, pad = enc.model, enc.pad_id()
        texts = list(dict.fromkeys(train["text_a"].tolist() + train["text_b"].tolist()))
        where = {t: i for i, t in enumerate(texts)}
        seq_a = np.array([where[t] for t in train["text_a"]])
        seq_b = np.array([where[t] for t in train["text_b"]])
        n_rows = len(train)

        def tokenise(rows: np.ndarray) -> list[list[int]]:
            return enc.token_ids([texts[i] for i in rows])

        all_rows = np.arange(len(texts))
        head = None
    else:
        ce = CrossEncoder.from_base(MODEL, 128)
        model, pad, head = ce.model, ce.tokenizer.pad_token_id, ce.head
        first = train["text_a"].tolist() + train["text_b"].tolist()
        second = train["text_b"].tolist() + train["text_a"].tolist()
        n_rows = len(first)

        def tokenise(rows: np.ndarray) -> list[list[int]]:
            return ce.pair_ids([first[i] for i in rows], [second[i] for i in rows])[0]

        all_rows = np.arange(n_rows)
    split = SplitEncoder(model, frozen, pad_id=pad, bit_masks=None if bits else False)
    precision, _ = resolve(setting, torch.device("cpu"))
    before = variant in UNPADDED
    unpadded = mock.patch.object(split_module, "pack_multiple", lambda device: 1)
    if before:  # the packed rows as they were: no padding to a round number
        unpadded.start()
    t0 = time.perf_counter()
    ids = tokenise(all_rows) if once else None
    one_time["tokenise"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    chunked = variant in CHUNKED
    frozen_precision = "fp32" if before or (chunked and kind == "bi-encoder") else precision  # as shipped
    exact: list[int] = []
    if kind == "bi-encoder":
        exact = [i for i, t in enumerate(texts) if t in train.attrs.get("evaluated", ())]
    states = split.prepare(ids, precision=frozen_precision, exact=exact) if ids is not None else None
    one_time["frozen layers" if frozen else "embedding block"] = time.perf_counter() - t0
    named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if head is not None:
        named += [(f"head.{n}", p) for n, p in head.named_parameters()]
    optimizer = adamw(named, 1e-4, 0.01) if fused else torch.optim.AdamW([p for _, p in named], lr=1e-4)
    lengths = np.array([len(x) for x in ids]) if ids is not None else None
    ph = Phases()
    model.train()
    step = 0
    while step < steps + 3:
        if kind == "bi-encoder":
            pair_rows = (
                bucketed_batches(lengths[seq_a] + lengths[seq_b], BATCH, rng)
                if bucketed and lengths is not None
                else [rng.permutation(n_rows)[i : i + BATCH] for i in range(0, n_rows, BATCH)]
            )
        else:
            pair_rows = (
                bucketed_batches(lengths, BATCH, rng)
                if bucketed and lengths is not None
                else [rng.permutation(n_rows)[i : i + BATCH] for i in range(0, n_rows, BATCH)]
            )
        for rows in pair_rows:
            if step >= steps + 3:
                break
            timed = step >= 3  # the first steps set up kernels: untimed
            t = time.perf_counter()
            seq_rows = np.concatenate([seq_a[rows], seq_b[rows]]) if kind == "bi-encoder" else rows
            if states is not None and packed:
                mask = None
                t = ph.add("batch", t) if timed else time.perf_counter()
            elif states is not None:
                hidden0, mask = split.batch(states, seq_rows)
                t = ph.add("batch", t) if timed else time.perf_counter()
            else:
                batch_ids = tokenise(seq_rows)
                t = ph.add("tokenise", t) if timed else time.perf_counter()
                batch = pad_batch(batch_ids, list(range(len(seq_rows))), pad, multiple=1)
                t = ph.add("batch", t) if timed else time.perf_counter()
            with autocast(precision, torch.device("cpu")):
                if mask is None and kind == "bi-encoder":  # packed, in nlsim's chunks
                    chunk = BATCH if chunked else step_chunk(BATCH, precision, torch.device("cpu"), True)
                    pooled = pooled_rows(split, states, seq_rows, chunk)
                elif mask is None:  # packed
                    hidden, packing = split.forward_packed(states, seq_rows)
                    pooled = segment_mean(hidden.float(), packing)
                elif states is not None:
                    hidden = split.upper(hidden0, mask)
                    pooled = mean_pool(hidden.float(), mask)
                else:
                    tensors = {k: torch.from_numpy(v) for k, v in batch.items()}
                    hidden, mask = model(**tensors).last_hidden_state, tensors["attention_mask"]
                    pooled = mean_pool(hidden.float(), mask)
                if kind == "bi-encoder":
                    emb = pooled
                    loss = cosent_loss(emb[: len(rows)], emb[len(rows) :], torch.rand(len(rows)))
                else:
                    logits = head(pooled).squeeze(-1)
                    loss = torch.nn.functional.binary_cross_entropy_with_logits(
                        logits.float(), torch.rand(len(rows))
                    )
            t = ph.add("forward", t) if timed else time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            t = ph.add("backward", t) if timed else time.perf_counter()
            optimizer.step()
            ph.add("optimizer", t) if timed else None
            if timed:
                real = int(states.lengths[seq_rows].sum()) if mask is None else int(mask.sum())
                ph.tokens += real if mask is None else int(mask.numel())
                ph.real_tokens += real
            step += 1
    if before:
        unpadded.stop()
    per_step = {k: round(v / steps, 4) for k, v in ph.seconds.items()}
    return {
        "loop": kind,
        "variant": variant,
        "frozen_layers": frozen,
        "precision": precision,
        "one_time_s": {k: round(v, 2) for k, v in one_time.items()},
        "per_step_s": per_step,
        "s_per_step": round(sum(per_step.values()), 4),
        "tokens_per_step": round(ph.tokens / steps, 1),
        "padding_share": round(1 - ph.real_tokens / max(ph.tokens, 1), 3),
        "steps_per_epoch": math.ceil(n_rows / BATCH),
    }


def profile(args: argparse.Namespace) -> dict[str, Any]:
    train = training_pairs()
    rows = []
    for kind in args.loops.split(","):
        for variant in args.variants.split(","):
            r = profile_loop(kind, variant, train, args.steps, args.threads)
            rows.append(r)
            print(json.dumps(r), flush=True)
    lines = [
        f"## Where a training step goes ({cpu_name()}, {args.threads} threads, batch {BATCH}, "
        f"{args.steps} timed steps)",
        "",
        "| loop | variant | frozen | precision | one-time s | batch | tokenise | forward | backward | "
        "optimizer | s/step | tokens/step (padding) | s/epoch |",
        "|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        p = r["per_step_s"]
        once = ", ".join(f"{k} {v}" for k, v in r["one_time_s"].items())
        lines.append(
            f"| {r['loop']} | {r['variant']} | {r['frozen_layers']} | {r['precision']} | {once} | "
            f"{p.get('batch', 0):.3f} | {p.get('tokenise', 0):.3f} | {p['forward']:.3f} | "
            f"{p['backward']:.3f} | {p['optimizer']:.3f} | {r['s_per_step']:.3f} | "
            f"{r['tokens_per_step']:.0f} ({r['padding_share']:.0%}) | "
            f"{r['s_per_step'] * r['steps_per_epoch']:.0f} |"
        )
    return {"rows": rows, "markdown": "\n".join(lines)}


# --- side by side ---------------------------------------------------------------------------------------


def ours(kind: str, train: Any, args: argparse.Namespace) -> float:
    """s/step of nlsim's loop (shipped settings) over the first ``len(train)`` pairs, one epoch."""
    from nlsim.training.config import CrossEncoderConfig, FinetuneConfig

    val = train.head(16)
    if kind == "bi-encoder":
        from nlsim.encoders import load_encoder
        from nlsim.training.bi_encoder import train_encoder

        enc = load_encoder(MODEL, backend="torch", threads=args.threads)
        cfg = FinetuneConfig.of(epochs=1, batch_size=BATCH, threads=args.threads, log_every=0, seed=1)
        out = train_encoder(enc, train, val, cfg, log=lambda _: None)
        return out["seconds_per_epoch"][0] / out["steps"]
    from nlsim.training.cross_encoder import train_cross_encoder

    marks: dict[str, float] = {}
    cfg = CrossEncoderConfig(epochs=1, batch_size=BATCH, threads=args.threads, log_every=0, seed=1)
    history = train_cross_encoder(MODEL, train, val, cfg, log=lambda _: None).history
    marks["s"] = history[0]["seconds"]
    return marks["s"] / math.ceil(2 * len(train) / BATCH)


def st_bi_encoder(train: Any, args: argparse.Namespace) -> float:
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, losses
    from sentence_transformers.training_args import SentenceTransformerTrainingArguments

    from nlsim.encoders.registry import registry_folder

    model = SentenceTransformer(str(registry_folder(MODEL)), device="cpu")
    model.max_seq_length = 64
    model[0].auto_model.get_input_embeddings().weight.requires_grad_(False)
    data = Dataset.from_dict(
        {
            "sentence1": ["query: " + t for t in train["text_a"]],
            "sentence2": ["query: " + t for t in train["text_b"]],
            "score": train["score"].astype(float).tolist(),
        }
    )
    return st_timed(
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
        model,
        data,
        losses.CoSENTLoss(model),
    )


def st_cross_encoder(train: Any, args: argparse.Namespace) -> float:
    from datasets import Dataset
    from sentence_transformers.cross_encoder import CrossEncoder, CrossEncoderTrainer, losses
    from sentence_transformers.cross_encoder.training_args import CrossEncoderTrainingArguments

    from nlsim.encoders.registry import registry_folder

    model = CrossEncoder(str(registry_folder(MODEL)), num_labels=1, max_length=128, device="cpu")
    model.model.get_input_embeddings().weight.requires_grad_(False)
    a, b = train["text_a"].tolist(), train["text_b"].tolist()
    data = Dataset.from_dict(
        {"sentence1": a + b, "sentence2": b + a, "score": train["score"].astype(float).tolist() * 2}
    )
    return st_timed(
        CrossEncoderTrainer, CrossEncoderTrainingArguments, model, data, losses.BinaryCrossEntropyLoss(model)
    )


def st_timed(trainer_cls: Any, args_cls: Any, model: Any, data: Any, loss: Any) -> float:
    """s/step of a sentence-transformers trainer over ``data``, one epoch, its optimizer steps timed."""
    from transformers import TrainerCallback

    marks: dict[str, float] = {}

    class Clock(TrainerCallback):
        def on_step_begin(self, a, s, c, **kw):  # noqa: ANN001, ANN003, ANN201
            marks.setdefault("first", time.perf_counter())

        def on_step_end(self, a, s, c, **kw):  # noqa: ANN001, ANN003, ANN201
            marks["last"] = time.perf_counter()
            marks["steps"] = s.global_step

    targs = args_cls(
        output_dir=str(ROOT / ".cache" / "st-speed"),
        num_train_epochs=1,
        per_device_train_batch_size=BATCH,
        learning_rate=1e-4,
        warmup_ratio=0.1,
        lr_scheduler_type="linear",
        seed=1,
        save_strategy="no",
        eval_strategy="no",
        logging_strategy="no",
        report_to="none",
        dataloader_num_workers=0,
        use_cpu=True,
        disable_tqdm=True,
    )
    trainer_cls(model=model, args=targs, train_dataset=data, loss=loss, callbacks=[Clock()]).train()
    return (marks["last"] - marks["first"]) / max(1, marks["steps"] - 1)


def side_by_side(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    torch.set_num_threads(args.threads)
    train = training_pairs()
    rows = {}
    n_train = len(train)
    for kind, theirs in (("bi-encoder", st_bi_encoder), ("cross-encoder", st_cross_encoder)):
        per_block = BATCH * args.steps // (2 if kind == "cross-encoder" else 1)
        block = train.sample(n=per_block, random_state=0).reset_index(drop=True)
        ours(kind, block.head(BATCH * 2), args)  # untimed warm-ups
        theirs(block.head(BATCH * 2), args)
        blocks: dict[str, list[float]] = {"nlsim": [], "sentence-transformers": []}
        for r in range(args.rounds):
            blocks["nlsim"].append(ours(kind, block, args))
            blocks["sentence-transformers"].append(theirs(block, args))
            print(
                f"{kind} round {r + 1}: nlsim {blocks['nlsim'][-1]:.3f} s/step, sentence-transformers "
                f"{blocks['sentence-transformers'][-1]:.3f} s/step",
                flush=True,
            )
        steps = math.ceil(n_train * (2 if kind == "cross-encoder" else 1) / BATCH)
        rows[kind] = {
            name: {
                "s_per_step": [round(v, 4) for v in vals],
                "median": round(statistics.median(vals), 4),
                "s_per_epoch": round(statistics.median(vals) * steps, 1),
            }
            for name, vals in blocks.items()
        }
        rows[kind]["steps_per_epoch"] = steps
    lines = [
        f"## nlsim beside sentence-transformers ({cpu_name()}, {args.threads} threads, batch {BATCH}, "
        f"{args.steps} steps a block, {args.rounds} rounds)",
        "",
        "| loop | trainer | s/step per block | median s/step | s per epoch (our 1,785 pairs) |",
        "|---|---|---|---:|---:|",
    ]
    for kind, r in rows.items():
        for name in ("nlsim", "sentence-transformers"):
            v = r[name]
            lines.append(
                f"| {kind} | {name} | {', '.join(f'{x:.3f}' for x in v['s_per_step'])} | {v['median']:.3f} | "
                f"{v['s_per_epoch']:.0f} |"
            )
    return {"rows": rows, "markdown": "\n".join(lines)}


def one_of(choices: list[str]) -> Any:
    """An argparse ``type`` for a comma list whose every item is one of ``choices`` (a typo is refused in one
    line before any timing, not met as a traceback after the variants before it were timed)."""

    def parse(text: str) -> str:
        unknown = [x for x in text.split(",") if x not in choices]
        if unknown or not text:
            raise argparse.ArgumentTypeError(
                f"{', '.join(unknown) or text!r}: choose from {', '.join(choices)}"
            )
        return text

    return parse


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser(
        "profile",
        help="time the phases of nlsim's two training loops, per setting",
        description="Time the phases of nlsim's two training loops (one-time costs, then per step: batch, "
        "forward, backward, optimizer) for the settings of each --variants.",
    )
    p.add_argument("--steps", type=positive(), default=40, help="timed steps of each loop (default: 40)")
    p.add_argument("--threads", type=positive(), default=2, help="torch CPU threads (default: 2)")
    p.add_argument(
        "--variants",
        type=one_of(list(VARIANTS)),
        default=",".join(VARIANTS),
        help=f"the settings profiled, comma-separated, from {', '.join(VARIANTS)} (default: all of them)",
    )
    p.add_argument(
        "--loops",
        type=one_of(["bi-encoder", "cross-encoder"]),
        default="bi-encoder,cross-encoder",
        help="the loops profiled, comma-separated (default: bi-encoder,cross-encoder)",
    )
    s = sub.add_parser(
        "side-by-side",
        help="nlsim's loops against sentence-transformers' trainers (needs the [bench] extra)",
        description="Time nlsim's training loops against sentence-transformers' trainers, in alternating "
        "blocks of --steps optimizer steps. Needs the [bench] extra: pip install -e '.[bench]'.",
    )
    s.add_argument(
        "--steps", type=positive(), default=20, help="optimizer steps in each timed block (default: 20)"
    )
    s.add_argument(
        "--rounds", type=positive(), default=2, help="blocks of each trainer, alternating (default: 2)"
    )
    s.add_argument("--threads", type=positive(), default=2, help="torch CPU threads (default: 2)")
    for part in (p, s):
        part.add_argument(
            "--tag",
            default="",
            help="results go to finetune_speed_CMD_TAG.{md,json} (default: none, finetune_speed_CMD.*)",
        )
    args = ap.parse_args(argv)
    if args.cmd == "side-by-side":  # before nlsim's warm-up trains, not at sentence-transformers' turn
        needs_bench_extra(ap, "side-by-side", ("sentence_transformers", "datasets", "accelerate"))
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    result = profile(args) if args.cmd == "profile" else side_by_side(args)
    print("\n" + result["markdown"])
    OUT.parent.mkdir(parents=True, exist_ok=True)
    tag = f"_{args.tag}" if args.tag else ""
    path = OUT.parent / f"{OUT.name}_{args.cmd}{tag}"
    atomic_write_text(
        path.with_suffix(".json"), json.dumps({"cpu": cpu_name(), "settings": vars(args), **result}, indent=2)
    )
    atomic_write_text(path.with_suffix(".md"), result["markdown"] + "\n")


if __name__ == "__main__":
    main()
