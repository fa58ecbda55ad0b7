#!/usr/bin/env bash
# Set everything up and run the main job: the chain on the bundled data. The zero-shot baseline, fine-tuning
# of multilingual-e5-small and its reranker on the annotated pairs (reused when they have not changed),
# evaluation on the validation split, promotion into models/ only when better, the near-duplicate report of
# the bundled THUCNews corpus (10,000 headlines, Taiwan Traditional) with the current model, judged against
# the editors' validation pairs. Output: reports/thucnews/ (index.html, pairs.parquet, clusters.parquet, ...).
# On a first run (no model promoted yet) the zero-shot report is written there first, within minutes, and
# the run says so; the fine-tuned model's report replaces it when training ends (`--no-first-report`: not).
# Arguments go to `nlsim pipeline` (e.g. `bash run.sh --force-train`; with `--no-report` the bundled corpus and
# report folder are not given: the chain stops after the promotion).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
export PREFECT_HOME=${PREFECT_HOME:-$PWD/.prefect} PREFECT_SERVER_ANALYTICS_ENABLED=false DO_NOT_TRACK=1
report=(--corpus data/thucnews.parquet --out reports/thucnews)
for arg in "$@"; do  # --no-report: no report setting (the chain refuses one with it: it would do nothing)
  if [ "$arg" = --no-report ]; then report=(); fi
done
exec .venv/bin/nlsim pipeline --pairs annotations/thucnews_tw_pairs.tsv ${report[@]+"${report[@]}"} \
  --model-store models "$@"
