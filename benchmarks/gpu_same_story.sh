#!/usr/bin/env bash
# Cross-encoder recipes out of fold on a GPU machine: `bench_same_story.py run --mode both` (five folds over
# train + validation, and train -> validation) for each recipe named below, several processes side by side
# on the one GPU. Brings back $OUT/same_story_cache.tgz (benchmarks/results/cache/same_story/, refreshed every
# 20 s so that a run cut short still returns what finished) and $OUT/gpu_same_story.log.
# On a bare machine, bring .gpu/ (python scripts/gpu_bundle.py) as scripts/gpu_check.sh does.
#   bash benchmarks/gpu_same_story.sh "g-f4-e3 --seed 42" "g-f6-e1 --frozen 6 --epochs 1 --precision fp32"
set -uo pipefail
case ${1:-} in -h | --help) sed -n '2,/^set -/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac  # the text above, and nothing run
if [ $# -eq 0 ]; then  # else nothing to run, and the wait below would wait for the cache's copier for good
  echo "gpu_same_story.sh: name one recipe or more, e.g. \"g-f4-e3 --seed 42\" (--help: what it does)" >&2
  exit 2
fi
# a relative folder given (OUT) or PYTHON path (one with a /) is the caller's folder's: made whole
# before the cd below; the default gpu-same-story/ is the repository's
OUTDIR=${OUT:-}
case $OUTDIR in "" | /*) ;; *) OUTDIR=$PWD/${OUTDIR#./} ;; esac
case ${PYTHON:-/} in /*) ;; */*) PYTHON=$PWD/${PYTHON#./} ;; esac
cd "$(dirname "$0")/.."
OUTDIR=${OUTDIR:-gpu-same-story}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
PY=${PYTHON:-python3}
export NLSIM_HOME=/tmp/nlsim-gpu-home PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
LOG=$OUTDIR/gpu_same_story.log
# shellcheck source=scripts/gpu_site.sh
. scripts/gpu_site.sh
gpu_site "$PY" || exit 1
{ nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; lscpu | sed -n 's/^Model name: *//p'; date -u; } > "$LOG"
# the converted base model once, before the processes share it
"$PY" -c "from nlsim.rerank.cross_encoder import CrossEncoder; CrossEncoder.from_base('multilingual-e5-small')" >> "$LOG" 2>&1
CACHE=benchmarks/results/cache/same_story
mkdir -p "$CACHE"
( while sleep 20; do tar czf "$OUTDIR/same_story_cache.tmp" "$CACHE" 2>/dev/null && mv "$OUTDIR/same_story_cache.tmp" "$OUTDIR/same_story_cache.tgz"; done ) &
TARRER=$!
recipe() {  # recipe NAME ARGS...
  local name=$1 t0=$SECONDS
  shift
  "$PY" benchmarks/bench_same_story.py run --name "$name" --mode both --threads 2 "$@" > "/tmp/$name.log" 2>&1
  echo "$name: exit $? in $((SECONDS - t0)) s" >> "$LOG"
  tail -n 3 "/tmp/$name.log" >> "$LOG"
}
for spec in "$@"; do  # each argument: "NAME ARGS...", run side by side
  # shellcheck disable=SC2086
  recipe $spec &
done
wait $(jobs -p | grep -v "^$TARRER$")
kill $TARRER 2>/dev/null
tar czf "$OUTDIR/same_story_cache.tgz" "$CACHE"
date -u >> "$LOG"
cat "$LOG"
