#!/usr/bin/env bash
# Set everything up and run the main job: the near-duplicate report for the bundled THUCNews corpus
# (10,000 headlines, Taiwan Traditional), with the default model (multilingual-e5-small) and conversion
# (tw2sp). The duplicate threshold is calibrated on the annotated validation pairs first (no hard-coded
# cosine). Output: reports/thucnews/ (pairs.parquet, clusters.parquet, index.html, summary.md).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
export PREFECT_HOME=${PREFECT_HOME:-$PWD/.prefect} PREFECT_SERVER_ANALYTICS_ENABLED=false DO_NOT_TRACK=1
mkdir -p reports
.venv/bin/nlsim calibrate --model multilingual-e5-small --pairs annotations/thucnews_tw_pairs.tsv \
  --split validation --level "${NLSIM_LEVEL:-same-story}" --convert tw2sp --out reports/e5-zero-shot-calibration.json
.venv/bin/nlsim dedup --corpus data/thucnews.parquet --out reports/thucnews \
  --calibration reports/e5-zero-shot-calibration.json "$@"
