"""A plain sentence-transformers ``encode`` script: the peer of ``nlsim embed``, whole process timed.

What a user who wants speed would write: read the titles, load the model folder (torch, or the ONNX
backend, or its dynamic int8 ONNX file), ``encode`` with the model's prompt, normalised, batch 64, save the
matrix. ``benchmarks/bench_process.py`` times it in a fresh process, start-up included.

    python benchmarks/st_encode.py --folder FOLDER --prompt "query: " --corpus data/thucnews.parquet \\
        --out x.npy [--backend torch|onnx|onnx-int8] [--threads 2]
"""

from __future__ import annotations

import argparse


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folder", required=True, help="the sentence-transformers model folder")
    ap.add_argument("--prompt", default="", help="the prompt put before each text (default: none)")
    ap.add_argument("--corpus", required=True, help="the Parquet corpus embedded")
    ap.add_argument("--field", default="title", help="its text column (default: title)")
    ap.add_argument("--out", required=True, help="the .npy file written")
    ap.add_argument(
        "--backend",
        default="torch",
        choices=("torch", "onnx", "onnx-int8"),
        help="sentence-transformers' backend; onnx-int8: --int8-file (default: torch)",
    )
    ap.add_argument(
        "--int8-file",
        default="onnx/model_qint8_avx512_vnni.onnx",
        help="with --backend onnx-int8: the int8 ONNX file in the folder (default: "
        "onnx/model_qint8_avx512_vnni.onnx)",
    )
    ap.add_argument("--threads", type=int, default=2, help="torch (and ONNX Runtime) threads (default: 2)")
    ap.add_argument("--batch-size", type=int, default=64, help="texts per batch (default: 64)")
    args = ap.parse_args()

    import numpy as np
    import pandas as pd
    import torch
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    texts = pd.read_parquet(args.corpus, columns=[args.field])[args.field].tolist()
    kwargs = {}
    if args.backend != "torch":
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = args.threads
        name = args.int8_file if args.backend == "onnx-int8" else "onnx/model.onnx"
        kwargs = {"backend": "onnx", "model_kwargs": {"file_name": name, "session_options": so}}
    model = SentenceTransformer(args.folder, device="cpu", **kwargs)
    model.max_seq_length = 256
    emb = model.encode(
        texts,
        batch_size=args.batch_size,
        prompt=args.prompt or None,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    )
    np.save(args.out, emb.astype(np.float32))


if __name__ == "__main__":
    main()
