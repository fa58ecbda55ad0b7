"""Fine-tuning speed: nlsim's training loop against sentence-transformers' trainer, side by side.

Same model (multilingual-e5-small), same pairs (our training split, ``tw2sp`` text), same settings: batch
16, cosine-MSE loss (ST's CosineSimilarityLoss), AdamW lr 5e-5 with linear warm-up, max length 64,
word-embedding table frozen in both, same torch thread count. The two alternate in blocks (ours, ST,
ours, ST ...) so that load from other processes hits both alike, after one untimed warm-up run of each;
each block times only its optimizer steps (setup and validation excluded). Prints s/step per block, the
medians, and the implied time per epoch of the 1,400 training pairs (88 steps); writes
benchmarks/results/finetune_speed.json.

    python benchmarks/bench_finetune_speed.py [--steps 15] [--rounds 2] [--threads 2] [--unfrozen]
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
PAIRS = ROOT / "annotations" / "thucnews_tw_pairs.tsv"
OUT = ROOT / "benchmarks" / "results" / "finetune_speed.json"


def ours(train, val, args) -> float:  # noqa: ANN001
    from nlsim.encoders import load_encoder
    from nlsim.training.bi_encoder import train_encoder
    from nlsim.training.config import FinetuneConfig

    enc = load_encoder("multilingual-e5-small", threads=args.threads)
    cfg = FinetuneConfig(
        epochs=1,
        batch_size=16,
        lr=5e-5,
        max_length=64,
        freeze_embeddings=not args.unfrozen,
        threads=args.threads,
        log_every=0,
        seed=1,
    )
    out = train_encoder(enc, train, val, cfg, log=lambda _: None)
    return out["seconds_per_epoch"][0] / out["steps"]


def sentence_transformers(train, args) -> float:  # noqa: ANN001
    from datasets import Dataset
    from sentence_transformers import SentenceTransformer, SentenceTransformerTrainer, losses
    from sentence_transformers.training_args import SentenceTransformerTrainingArguments
    from transformers import TrainerCallback

    from nlsim.encoders.registry import registry_folder

    model = SentenceTransformer(str(registry_folder("multilingual-e5-small")), device="cpu")
    model.max_seq_length = 64
    if not args.unfrozen:
        model[0].auto_model.get_input_embeddings().weight.requires_grad_(False)
    data = Dataset.from_dict(
        {
            "sentence1": ["query: " + t for t in train["text_a"]],
            "sentence2": ["query: " + t for t in train["text_b"]],
            "score": train["score"].astype(float).tolist(),
        }
    )
    marks: dict[str, float] = {}

    class Clock(TrainerCallback):
        def on_step_begin(self, a, s, c, **kw):  # noqa: ANN001, ANN003, ANN201
            marks.setdefault("first", time.perf_counter())

        def on_step_end(self, a, s, c, **kw):  # noqa: ANN001, ANN003, ANN201
            marks["last"] = time.perf_counter()
            marks["steps"] = s.global_step

    targs = SentenceTransformerTrainingArguments(
        output_dir=str(ROOT / ".cache" / "st-speed"),
        num_train_epochs=1,
        per_device_train_batch_size=16,
        learning_rate=5e-5,
        warmup_steps=0.1,
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
    trainer = SentenceTransformerTrainer(
        model=model,
        args=targs,
        train_dataset=data,
        loss=losses.CosineSimilarityLoss(model),
        callbacks=[Clock()],
    )
    trainer.train()
    return (marks["last"] - marks["first"]) / marks["steps"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=15, help="optimizer steps per block")
    p.add_argument("--rounds", type=int, default=2, help="blocks per contender")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--no-warmup", dest="warmup", action="store_false", help="skip the untimed warm-up runs")
    p.add_argument("--unfrozen", action="store_true", help="train the word-embedding table too (both sides)")
    args = p.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import torch

    torch.set_num_threads(args.threads)
    from nlsim.io.pairs import load_pairs
    from nlsim.training.data import convert_pairs

    pairs = convert_pairs(load_pairs(PAIRS), "tw2sp")
    train = pairs[pairs["split"] == "train"].reset_index(drop=True).head(16 * args.steps)
    val = pairs[pairs["split"] == "validation"].reset_index(drop=True).head(16)
    if args.warmup:  # first-use costs (allocator, kernels) hit whichever runs first; pay them untimed
        ours(train.head(32), val, args)
        sentence_transformers(train.head(32), args)
    blocks: dict[str, list[float]] = {"nlsim": [], "sentence-transformers": []}
    for r in range(args.rounds):
        blocks["nlsim"].append(ours(train, val, args))
        print(f"round {r + 1}: nlsim {blocks['nlsim'][-1]:.2f} s/step", flush=True)
        blocks["sentence-transformers"].append(sentence_transformers(train, args))
        print(
            f"round {r + 1}: sentence-transformers {blocks['sentence-transformers'][-1]:.2f} s/step",
            flush=True,
        )
    steps_per_epoch = math.ceil(1400 / 16)
    print(
        f"\n## Fine-tuning speed, e5-small, bs 16, max length 64, "
        f"{'unfrozen' if args.unfrozen else 'frozen word embeddings'}, {args.threads} thread(s)\n"
    )
    print(
        "| trainer | s/step per block | median s/step | s per epoch (1,400 pairs, 88 steps) |\n"
        "|---|---|---|---|"
    )
    result = {"settings": vars(args), "blocks": blocks}
    for name, vals in blocks.items():
        med = statistics.median(vals)
        result[name] = {"median_s_per_step": med, "s_per_epoch": med * steps_per_epoch}
        print(f"| {name} | {', '.join(f'{v:.2f}' for v in vals)} | {med:.2f} | {med * steps_per_epoch:.0f} |")
    ratio = result["nlsim"]["median_s_per_step"] / result["sentence-transformers"]["median_s_per_step"]
    result["ratio_nlsim_over_st"] = ratio
    print(f"\nnlsim / sentence-transformers time ratio: {ratio:.2f} (< 1 means nlsim is faster)")
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
