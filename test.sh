#!/usr/bin/env bash
# Set everything up and run the whole test suite (slow tests included). Extra arguments go to pytest,
# e.g. `bash test.sh -m "not slow"` for the quick subset.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
bash scripts/setup_browser.sh  # chromium-headless-shell and fonts-noto-cjk for the report-page tests
export PREFECT_SERVER_ANALYTICS_ENABLED=false DO_NOT_TRACK=1
echo "style: ruff check and ruff format --check"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
exec .venv/bin/python -m pytest "$@"
