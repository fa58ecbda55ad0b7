#!/usr/bin/env bash
# The main job on a GPU machine for several seeds at once: the chain (`nlsim pipeline`, the command
# `bash run.sh` runs) once per seed given, side by side on the one GPU, each with a fresh model store and
# NLSIM_HOME under $GPU_WORK (default /tmp/nlsim-gpu-chains). Arguments after `--` go to every chain.
# Brings back into $OUT (or gpu-chains/): run-S.json per seed (the default report's run record: its
# threshold and `judge`, with the purity by cluster size) and gpu_chains.log, which ends with one line per
# seed: F1 and the purity of clusters of 5+ items on the validation pairs.
# On a bare machine, bring .gpu/ (python scripts/gpu_bundle.py) as scripts/gpu_check.sh does.
#   bash benchmarks/gpu_chains.sh 42 7 11 -- --story-model
set -uo pipefail
case ${1:-} in -h | --help) sed -n '2,/^set -/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac  # the text above, and nothing run
# a relative folder given (OUT, GPU_WORK) or PYTHON path (one with a /) is the caller's folder's: made whole
# before the cd below; the default gpu-chains/ is the repository's
OUTDIR=${OUT:-}
case $OUTDIR in "" | /*) ;; *) OUTDIR=$PWD/${OUTDIR#./} ;; esac
case ${GPU_WORK:-/} in /*) ;; *) GPU_WORK=$PWD/${GPU_WORK#./} ;; esac
case ${PYTHON:-/} in /*) ;; */*) PYTHON=$PWD/${PYTHON#./} ;; esac
cd "$(dirname "$0")/.."
OUTDIR=${OUTDIR:-gpu-chains}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
PY=${PYTHON:-python3}
WORK=${GPU_WORK:-/tmp/nlsim-gpu-chains}
mkdir -p "$WORK"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
LOG=$OUTDIR/gpu_chains.log
# shellcheck source=scripts/gpu_site.sh
. scripts/gpu_site.sh
gpu_site "$PY" || exit 1
seeds=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do seeds+=("$1"); shift; done
[ $# -gt 0 ] && shift  # the `--`
[ ${#seeds[@]} -gt 0 ] || seeds=(42)
{ nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; lscpu | sed -n 's/^Model name: *//p'; date -u
  echo "seeds ${seeds[*]}; chain arguments: ${*:-(none)}"; } >> "$LOG"
chain() {  # chain SEED ARGS...: the main job with that seed, its own home and store
  local seed=$1 t0=$SECONDS
  shift
  rm -rf "$WORK/home-$seed" "$WORK/models-$seed" "$WORK/report-$seed"
  NLSIM_HOME=$WORK/home-$seed "$PY" -m nlsim pipeline --pairs annotations/thucnews_tw_pairs.tsv \
    --corpus data/thucnews.parquet --out "$WORK/report-$seed" --model-store "$WORK/models-$seed" \
    --seed "$seed" --threads 4 --no-progress "$@" > "$WORK/chain-$seed.log" 2>&1
  echo "chain seed $seed: exit $? in $((SECONDS - t0)) s" >> "$LOG"
  tail -n 4 "$WORK/chain-$seed.log" >> "$LOG"
  cp "$WORK/report-$seed/run.json" "$OUTDIR/run-$seed.json" 2>> "$LOG"
}
for seed in "${seeds[@]}"; do
  chain "$seed" "$@" &
done
wait
"$PY" - "$OUTDIR" "${seeds[@]}" >> "$LOG" 2>&1 <<'PYEOF'
import json, sys
from pathlib import Path
for seed in sys.argv[2:]:
    path = Path(sys.argv[1]) / f"run-{seed}.json"
    if not path.is_file():
        print(f"seed {seed}: no report")
        continue
    j = json.loads(path.read_text())["judge"]
    large = next((b for b in j.get("purity_by_size") or [] if b["band"] == "5+"), None)
    print(f"seed {seed}: F1 {j['f1']} {j['f1_ci95']}, P {j['precision']}, R {j['recall']}, purity 5+ {large}")
PYEOF
date -u >> "$LOG"
