#!/usr/bin/env bash
# The ensemble of trainings on a GPU machine: the chain (`nlsim pipeline`, the main job's command, as
# `bash run.sh` runs it) once per seed given, side by side on the one GPU, each with a fresh model store and
# NLSIM_HOME; then benchmarks/bench_ensemble.py over the stores (single trainings, means of two, mean of all,
# judged as reports on the validation pairs).
# Brings back into $OUT (or gpu-ensemble/): run-S.json per seed (the default report's run record: its
# threshold and `judge`), ensemble_gpu_seeds.{md,json,png} and gpu_ensemble.log.
# On a bare machine, bring .gpu/ (python scripts/gpu_bundle.py) as scripts/gpu_check.sh does.
#   bash benchmarks/gpu_ensemble.sh 42 7 11
set -uo pipefail
cd "$(dirname "$0")/.."
OUTDIR=${OUT:-gpu-ensemble}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
PY=${PYTHON:-python3}
WORK=${GPU_WORK:-/tmp/nlsim-gpu-ensemble}
mkdir -p "$WORK"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
LOG=$OUTDIR/gpu_ensemble.log
# shellcheck source=scripts/gpu_site.sh
. scripts/gpu_site.sh
gpu_site "$PY" || exit 1
{ nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; lscpu | sed -n 's/^Model name: *//p'; date -u; } > "$LOG"
seeds=("${@:-42}")
chain() {  # chain SEED: the main job with that seed, its own home and store
  local seed=$1 t0=$SECONDS
  NLSIM_HOME=$WORK/home-$seed "$PY" -m nlsim pipeline --pairs annotations/thucnews_tw_pairs.tsv \
    --corpus data/thucnews.parquet --out "$WORK/report-$seed" --model-store "$WORK/models-$seed" \
    --seed "$seed" --threads 4 --no-progress > "$WORK/chain-$seed.log" 2>&1
  echo "chain seed $seed: exit $? in $((SECONDS - t0)) s" >> "$LOG"
  tail -n 4 "$WORK/chain-$seed.log" >> "$LOG"
  cp "$WORK/report-$seed/run.json" "$OUTDIR/run-$seed.json" 2>> "$LOG"
}
for seed in "${seeds[@]}"; do
  chain "$seed" &
done
wait
stores=()
for seed in "${seeds[@]}"; do stores+=(--model-store "$WORK/models-$seed"); done
names=$(IFS=,; echo "${seeds[*]}")
t0=$SECONDS
NLSIM_HOME=$WORK/home-${seeds[0]} "$PY" benchmarks/bench_ensemble.py "${stores[@]}" --names "$names" \
  --tag gpu_seeds > "$WORK/ensemble.log" 2>&1
echo "bench_ensemble: exit $? in $((SECONDS - t0)) s" >> "$LOG"
tail -n 30 "$WORK/ensemble.log" >> "$LOG"
cp benchmarks/results/ensemble_gpu_seeds.* "$OUTDIR/" 2>> "$LOG"
date -u >> "$LOG"
