#!/usr/bin/env bash
# The ensemble of trainings on a GPU machine: the main job once per seed given, side by side on the one GPU
# (benchmarks/gpu_chains.sh), then benchmarks/bench_ensemble.py over their model stores (single trainings,
# means of two, mean of all, judged as reports on the validation pairs).
# Brings back into $OUT (or gpu-ensemble/): run-S.json per seed, gpu_chains.log,
# ensemble_gpu_seeds.{md,json,png} and gpu_ensemble.log.
# On a bare machine, bring .gpu/ (python scripts/gpu_bundle.py) as scripts/gpu_check.sh does.
#   bash benchmarks/gpu_ensemble.sh 42 7 11
set -uo pipefail
case ${1:-} in -h | --help) sed -n '2,/^set -/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac  # the text above, and nothing run
cd "$(dirname "$0")/.."
export OUT=${OUT:-gpu-ensemble} GPU_WORK=${GPU_WORK:-/tmp/nlsim-gpu-ensemble}
PY=${PYTHON:-python3}
seeds=("${@:-42}")
bash benchmarks/gpu_chains.sh "${seeds[@]}"
# shellcheck source=scripts/gpu_site.sh
. scripts/gpu_site.sh
gpu_site "$PY" || exit 1
LOG=$OUT/gpu_ensemble.log
stores=()
for seed in "${seeds[@]}"; do stores+=(--model-store "$GPU_WORK/models-$seed"); done
names=$(IFS=,; echo "${seeds[*]}")
t0=$SECONDS
NLSIM_HOME=$GPU_WORK/home-${seeds[0]} PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 "$PY" benchmarks/bench_ensemble.py \
  "${stores[@]}" --names "$names" --tag gpu_seeds > "$GPU_WORK/ensemble.log" 2>&1
echo "bench_ensemble: exit $? in $((SECONDS - t0)) s" >> "$LOG"
tail -n 30 "$GPU_WORK/ensemble.log" >> "$LOG"
cp benchmarks/results/ensemble_gpu_seeds.{md,json,png} "$OUT/" 2>> "$LOG"
date -u >> "$LOG"
