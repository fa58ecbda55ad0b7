#!/usr/bin/env bash
# Scored pairs for benchmarks/bench_cluster_rule.py from the chain trained with each seed given, on a GPU
# machine, plus what the default report (`bash run.sh`'s) gives with that training:
#   per seed: the chain (`nlsim pipeline --seed S`, fresh model store; its report is the default one, judged
#   on the validation pairs), then a wide report of the same model at threshold 0.84 with the series veto
#   off and the components rule (the benchmark applies the rules and the veto itself).
# Brings back into $OUT (or the first argument): pairs-S.parquet (the wide report's scored pairs, the columns
# the benchmark reads), run-S.json (the default report's run record: calibrated threshold and `judge`).
# On a bare machine, bring .gpu/ (python scripts/gpu_bundle.py) as scripts/gpu_check.sh does.
#   bash benchmarks/gpu_cluster_scores.sh OUTDIR 42 7 11
set -euo pipefail
case ${1:-} in -h | --help) sed -n '2,/^set -/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac  # the text above, and nothing run
# a relative folder given (the first argument, OUT, GPU_WORK) or PYTHON path (one with a /) is the caller's
# folder's: made whole before the cd below; the default gpu-cluster-scores/ is the repository's
OUTDIR=${1:-${OUT:-}}
case $OUTDIR in "" | /*) ;; *) OUTDIR=$PWD/${OUTDIR#./} ;; esac
case ${GPU_WORK:-/} in /*) ;; *) GPU_WORK=$PWD/${GPU_WORK#./} ;; esac
case ${PYTHON:-/} in /*) ;; */*) PYTHON=$PWD/${PYTHON#./} ;; esac
cd "$(dirname "$0")/.."
OUTDIR=${OUTDIR:-gpu-cluster-scores}
shift || true
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
PY=${PYTHON:-python3}
WORK=${GPU_WORK:-/tmp/nlsim-gpu-cluster}
mkdir -p "$WORK"
export NLSIM_HOME=$WORK/home PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# shellcheck source=scripts/gpu_site.sh
. scripts/gpu_site.sh
gpu_site "$PY" || exit 1
for seed in "${@:-42}"; do
  store=$WORK/models-$seed
  "$PY" -m nlsim pipeline --pairs annotations/thucnews_tw_pairs.tsv --corpus data/thucnews.parquet \
    --out "$WORK/report-$seed" --model-store "$store" --seed "$seed" --no-progress 2>&1 | tail -5
  cp "$WORK/report-$seed/run.json" "$OUTDIR/run-$seed.json"
  "$PY" -m nlsim dedup --corpus data/thucnews.parquet --out "$WORK/wide-$seed" --model current \
    --model-store "$store" --threshold 0.84 --no-series-veto --cluster-rule components --near-misses 0 \
    --no-progress 2>&1 | tail -2
  "$PY" -c "import pandas as pd, sys; p = pd.read_parquet(sys.argv[1]); \
p[['id_a', 'id_b', 'similarity', 'cosine', 'cross_encoder', 'title_a', 'title_b']].to_parquet(sys.argv[2])" \
    "$WORK/wide-$seed/pairs.parquet" "$OUTDIR/pairs-$seed.parquet"
done
ls -la "$OUTDIR"
