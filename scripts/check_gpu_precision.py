"""Check the half-precision inference paths on a CUDA GPU, in about a minute, with nothing to download.

A small random BERT (4 layers, 256 wide, a word-piece vocabulary of 300 made-up words) stands in for the
models, so the check runs wherever torch, transformers, pandas and scipy are installed (opencc is not
needed). On the GPU it:

1. makes the quality check of the bi-encoder and of a cross-encoder over the same model, on the GPU
   (``nlsim.training.lossy_check``): the record must hold ``torch-bf16@cuda`` (where the GPU has bf16) and
   ``torch-fp16@cuda`` with their figures, and the CPU-only paths marked not checked;
2. embeds 3,000 texts with ``--precision auto`` and with bf16 and fp16 forced, and scores 5,000-pair jobs
   with the cross-encoder the same way: the choice must be a half precision on the GPU where the check
   passed it and the probe found it at least ``LOSSY_MIN_GAIN`` times faster than fp32 (else fp32; a random
   cross-encoder may also fail its check), and the outputs close to fp32's;
3. asks for int8: the encoder's options say the CPU with a warning; the cross-encoder leaves the GPU with a
   warning.

It writes what it saw to ``$OUT/gpu_precision.json`` (default ``gpu_precision.json`` here) and exits 1 when a
promise does not hold; without a CUDA GPU it says that it needs one and exits 2. Usage:
``python scripts/check_gpu_precision.py`` (``DEVICE=cpu`` runs the CPU part of the same checks, for trying the
script without a GPU).
"""

from __future__ import annotations

import argparse
import atexit
import json
import math
import os
import shutil
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

sys.modules.setdefault("opencc", types.ModuleType("opencc"))  # conversion "none" never calls it
if "NLSIM_HOME" not in os.environ:  # a home of its own, removed when the check ends
    os.environ["NLSIM_HOME"] = tempfile.mkdtemp(prefix="nlsim-gpu-check-")
    atexit.register(shutil.rmtree, os.environ["NLSIM_HOME"], ignore_errors=True)

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402
from transformers import BertConfig, BertModel, BertTokenizerFast  # noqa: E402

from nlsim.encoders import Encoder  # noqa: E402
from nlsim.encoders.planner import Planner  # noqa: E402
from nlsim.encoders.registry import run_options  # noqa: E402
from nlsim.inference.choice import LOSSY_MIN_GAIN  # noqa: E402
from nlsim.inference.gpu import cuda_missing, gpu_info  # noqa: E402
from nlsim.rerank.cross_encoder import CrossEncoder  # noqa: E402
from nlsim.rerank.target import cross_encoder_inference  # noqa: E402
from nlsim.training.lossy_check import check_cross_encoder, check_encoder, store_checks  # noqa: E402

DEVICE = os.environ.get("DEVICE", "cuda")
WORDS = [f"w{i}" for i in range(300)]


def tiny_bert(folder: Path) -> tuple[BertConfig, BertTokenizerFast]:
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]))
    tok = BertTokenizerFast(str(folder / "vocab.txt"))
    cfg = BertConfig(
        vocab_size=len(tok),
        hidden_size=256,
        num_hidden_layers=4,
        num_attention_heads=4,
        intermediate_size=1024,
        max_position_embeddings=128,
        attn_implementation="sdpa",
    )
    return cfg, tok


def graded_pairs(texts: list[str], rng: np.random.Generator) -> pd.DataFrame:
    """Pairs whose second text has 0-3 words changed, graded 1.0 down to 0.25."""
    b, gold = [], []
    for text in texts:
        words = text.split()
        changes = int(rng.integers(0, 4))
        for _ in range(changes):
            words[int(rng.integers(0, len(words)))] = str(rng.choice(WORDS))
        b.append(" ".join(words))
        gold.append([1.0, 0.75, 0.5, 0.25][changes])
    return pd.DataFrame({"text_a": texts, "text_b": b, "score": gold})


class Reranker:
    """The reranker's surface the quality check uses: its cross-encoder and the score combination."""

    def __init__(self, ce: CrossEncoder) -> None:
        self.cross_encoder = ce
        self.threshold = None

    @staticmethod
    def combine(cos: np.ndarray, cross: np.ndarray) -> np.ndarray:
        return 0.5 * cos + 0.5 * cross


def expected_pick(record: dict[str, Any], half: tuple[str, ...], probe: dict[str, float]) -> str:
    """What ``auto`` must take on the GPU: of fp32 and the half precisions the check passed there, the
    fastest in the probe, a half precision only when it is ``LOSSY_MIN_GAIN`` times faster than fp32."""
    passed = [p for p in half if record["paths"].get(f"{p}@cuda", {}).get("passed")]
    fastest = max(passed, key=lambda p: probe.get(p, 0.0), default=None)
    if fastest is None or probe.get(fastest, 0.0) < LOSSY_MIN_GAIN * probe.get("torch-fp32", math.inf):
        return "torch-fp32"
    return fastest


def entries(record: dict[str, Any]) -> dict[str, dict[str, Any]]:
    keep = ("passed", "verdict", "min_cosine", "max_score_diff", "spearman", "not_checked")
    return {k: {x: v.get(x) for x in keep if x in v} for k, v in record["paths"].items()}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """``--help``: the module's text; the check takes no option (``DEVICE``, ``OUT``: the environment's)."""
    parser = argparse.ArgumentParser(
        prog="check_gpu_precision.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="environment: DEVICE (default cuda; cpu: the CPU part), OUT (where gpu_precision.json goes)",
    )
    return parser.parse_args(argv)


def no_gpu() -> str | None:
    """Why the check cannot run here: ``DEVICE`` names CUDA and torch sees no CUDA GPU (``None``: it can)."""
    why = cuda_missing(DEVICE)
    if why is None:
        return None
    return (
        f"needs a CUDA GPU, and {why}: run it on a machine with one, or with DEVICE=cpu for the CPU part "
        "of the checks"
    )


def main(argv: list[str] | None = None) -> int:
    parse_args(argv)
    missing = no_gpu()
    if missing is not None:
        print(f"check_gpu_precision.py: error: {missing}", file=sys.stderr)
        return 2
    out: dict[str, Any] = {"torch": torch.__version__, "device": DEVICE}
    failures: list[str] = []
    gpu = gpu_info(DEVICE)
    out["gpu"] = gpu.as_dict() if gpu is not None else None
    out["run_options_bf16"] = run_options(None, None, "auto", "bf16")
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    cfg, tok = tiny_bert(Path(tempfile.mkdtemp()))
    texts = [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 30)))) for _ in range(3000)]
    weights = BertModel(cfg, add_pooling_layer=False).state_dict()

    def encoder(planner: Planner | None = None) -> Encoder:
        model = BertModel(cfg, add_pooling_layer=False)
        model.load_state_dict(weights)
        enc = Encoder(model, tok, name="tiny", model_id="test:tiny", max_length=64, device=DEVICE)
        if planner is not None:
            enc.set_planner(planner)
        return enc

    enc = encoder()
    ref = enc.encode(texts, progress=False, runner="torch")
    pairs = graded_pairs(texts[:400], rng)
    record = check_encoder(enc, pairs)
    out["encoder_check"] = entries(record)
    half = gpu.half_paths() if gpu is not None else ()
    for path in half:
        if not record["paths"].get(f"{path}@cuda", {}).get("passed"):
            failures.append(f"the encoder's {path} did not pass its check on the GPU")
    store_checks({"encoder": record})
    auto = encoder(Planner("auto", "auto"))
    vectors = auto.encode(texts, progress=False)
    out["encoder_auto"] = {
        "path": auto.choice.path,
        "device": auto.choice.device,
        "line": auto.choice.describe(),
    }
    out["encoder_auto_lowest_cosine"] = float((vectors * ref).sum(axis=1).min())
    out["encoder_auto"]["probe"] = auto.choice.probe
    want = expected_pick(record, half, auto.choice.probe)
    if half and auto.choice.path != want:
        failures.append(f"auto took {auto.choice.path} on the GPU, not {want}")
    for precision in [p.split("-")[1] for p in half]:
        forced = encoder(Planner("torch", precision))
        got = forced.encode(texts, progress=False)
        low = float((got * ref).sum(axis=1).min())
        out[f"encoder_{precision}"] = {"device": forced.choice.device, "lowest_cosine": low}
        if low < 0.98 or "cuda" not in forced.choice.device:
            failures.append(f"encoder {precision}: lowest cosine {low:.4f} on {forced.choice.device}")
    model = BertModel(cfg, add_pooling_layer=False).to(DEVICE).eval()
    ce = CrossEncoder(model, tok, max_length=64)
    ce.head.to(DEVICE)
    ce_record = check_cross_encoder(Reranker(ce), enc, pairs)
    out["cross_encoder_check"] = entries(ce_record)
    store_checks({"reranker": ce_record})
    a, b = pairs["text_a"].tolist() * 13, pairs["text_b"].tolist() * 13
    choice, runner = cross_encoder_inference(ce, len(a), precision="auto")
    diff = float(np.abs(ce.predict(a[:400], b[:400], runner=runner) - ce.predict(a[:400], b[:400])).max())
    out["cross_encoder_auto"] = {"path": choice.path, "line": choice.describe(), "largest_difference": diff}
    want = expected_pick(ce_record, half, choice.probe)
    out["cross_encoder_auto"]["probe"] = choice.probe
    if half and choice.path != want:
        failures.append(f"the cross-encoder's auto took {choice.path}, not {want}")
    if half and not any(f"{p}@cuda" in ce_record["paths"] for p in half):
        failures.append("the cross-encoder's half precisions were not checked on the GPU")
    ce.__dict__.pop("_inference", None)
    int8, _ = cross_encoder_inference(ce, len(a), precision="int8")
    out["cross_encoder_int8"] = {"path": int8.path, "line": int8.describe()}
    if int8.device != "cpu":
        failures.append(f"the cross-encoder's int8 ran on {int8.device}")
    out["failures"] = failures
    target = Path(os.environ.get("OUT", ".")) / "gpu_precision.json"
    target.write_text(json.dumps(out, indent=1, default=str) + "\n", encoding="utf-8")
    print(json.dumps(out, indent=1, default=str))
    print(f"written: {target}; {'every promise held' if not failures else 'FAILED: ' + '; '.join(failures)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
