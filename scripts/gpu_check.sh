#!/usr/bin/env bash
# The GPU checks in one command, prepared to finish within 8 minutes on a machine with one GPU:
#   0. the set-up, timed apart, as scripts/setup.sh does it for `bash run.sh`: the packages the machine lacks,
#      the bytecode of what nlsim imports, the default model's fp32 folder in NLSIM_HOME (gpu_site.sh);
#   1. the cold chain on the bundled data (`python -m nlsim pipeline`, a fresh model store and report folder:
#      no promoted model), GPU_CHECK_COLD times (default 1), then the warm rerun; with GPU_CHECK_FRESH_HOME=1
#      one more cold chain from an empty NLSIM_HOME (the model converted inside the chain);
#   2. embedding against sentence-transformers on the same GPU (benchmarks/bench_gpu.py embed);
#   3. FAISS on the GPU at 1M vectors where the installed FAISS build sees a GPU (bench_gpu.py search);
#   4. with GPU_CHECK_PROFILE=1, the cold chain once more under cProfile (a fresh NLSIM_HOME and store):
#      chain_profile.txt, the functions that took the time.
# GPU_CHECK_WARM=0 leaves out the warm rerun, GPU_CHECK_EMBED=0 the embedding benchmark, GPU_CHECK_SEARCH=0
# the FAISS benchmark.
# It writes one summary, gpu_check.md, with the logs and JSON records beside it, into $OUT (or the folder
# given as the first argument, default gpu-check/), and exits 1 when a stage failed (the summary says which).
#
# On a machine that has nlsim installed (pip install -e '.[gpu]' or '.[gpu-cu12]'), run it as it is. On a
# bare machine with torch, transformers and the scientific stack but without opencc, faiss, openpyxl or
# e5's weights, first run `python scripts/gpu_bundle.py` where pip works, and bring the folder .gpu/ along:
# this script installs it into /tmp/nlsim-site (GPU_SITE names another folder). FAISS's GPU build for
# CUDA 13 comes as parts (`python scripts/gpu_bundle.py --faiss-gpu`, .gpu-faiss/), brought over several calls
# (gpu_site.sh).
set -uo pipefail
case ${1:-} in -h | --help) sed -n '2,/^set -/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac  # the text above, and nothing run
# a relative folder given (the argument, OUT, GPU_CHECK_WORK) or PYTHON path (one with a /) is the caller's
# folder's: made whole before the cd below; the default gpu-check/ is the repository's
OUTDIR=${1:-${OUT:-}}
case $OUTDIR in "" | /*) ;; *) OUTDIR=$PWD/${OUTDIR#./} ;; esac
case ${GPU_CHECK_WORK:-/} in /*) ;; *) GPU_CHECK_WORK=$PWD/${GPU_CHECK_WORK#./} ;; esac
case ${PYTHON:-/} in /*) ;; */*) PYTHON=$PWD/${PYTHON#./} ;; esac
cd "$(dirname "$0")/.."
OUTDIR=${OUTDIR:-gpu-check}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
PY=${PYTHON:-python3}
WORK=${GPU_CHECK_WORK:-/tmp/nlsim-gpu-check}
rm -rf "$WORK" && mkdir -p "$WORK"
export NLSIM_HOME=$WORK/home PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
SUMMARY=$OUTDIR/gpu_check.md
say() { echo "$*" | tee -a "$SUMMARY"; }
: > "$SUMMARY"

# shellcheck source=scripts/gpu_site.sh
. scripts/gpu_site.sh
setup_start=$SECONDS
gpu_site "$PY" || exit 1
gpu_setup "$PY" > "$OUTDIR/setup.log" 2>&1 || { tail -n 15 "$OUTDIR/setup.log"; exit 1; }
setup_seconds=$((SECONDS - setup_start))
gpu_faiss "$PY" > "$WORK/faiss_gpu.txt" 2>&1  # not in a pipe: its exports must reach this shell
tee -a "$SUMMARY" < "$WORK/faiss_gpu.txt"

say "# GPU check ($(date -u +%Y-%m-%dT%H:%MZ))"
say ""
say "- GPU: $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1)"
say "- CPU: $(lscpu | sed -n 's/^Model name: *//p' | head -1), $(nproc) cores"
say "- $("$PY" -c 'import torch, transformers, faiss; print("torch", torch.__version__, "CUDA", torch.version.cuda, "| transformers", transformers.__version__, "| faiss", faiss.__version__, "GPUs seen by FAISS:", faiss.get_num_gpus() if hasattr(faiss, "StandardGpuResources") else "none (CPU build)")' 2>&1 | tail -1)"
say ""

failed=0  # the stages that failed: the check's exit status
stage() {  # stage NAME LOG COMMAND...: run, time, keep the log's tail in the summary on failure
  local name=$1 log=$2 t0=$SECONDS rc
  shift 2
  "$@" > "$OUTDIR/$log" 2>&1
  rc=$?
  say "- $name: exit $rc, $((SECONDS - t0)) s (log: $log)"
  [ $rc -eq 0 ] || { failed=$((failed + 1)); tail -n 15 "$OUTDIR/$log" | sed 's/^/    /' >> "$SUMMARY"; }
  return $rc
}

say "## The chain (bundled data)"
say "- set-up: $setup_seconds s (packages, bytecode, the default model's fp32 folder; log: setup.log)"
stage "cold chain" chain_cold.log "$PY" -m nlsim pipeline --pairs annotations/thucnews_tw_pairs.tsv \
  --corpus data/thucnews.parquet --out "$WORK/report" --model-store "$WORK/models" --json
cp "$WORK/report/pipeline.json" "$OUTDIR/pipeline.json" 2>/dev/null
for i in $(seq 2 "${GPU_CHECK_COLD:-1}"); do  # more cold chains: each its own new store and report folder
  stage "cold chain $i" "chain_cold$i.log" "$PY" -m nlsim pipeline --pairs annotations/thucnews_tw_pairs.tsv \
    --corpus data/thucnews.parquet --out "$WORK/cold$i/report" --model-store "$WORK/cold$i/models"
done
if [ "${GPU_CHECK_FRESH_HOME:-0}" != 0 ]; then  # the model converted inside the chain, as without set-up
  NLSIM_HOME=$WORK/fresh-home stage "cold chain from an empty NLSIM_HOME" chain_fresh_home.log \
    "$PY" -m nlsim pipeline --pairs annotations/thucnews_tw_pairs.tsv --corpus data/thucnews.parquet \
    --out "$WORK/fresh/report" --model-store "$WORK/fresh/models"
fi
if [ "${GPU_CHECK_WARM:-1}" != 0 ]; then  # GPU_CHECK_WARM=0 skips the warm rerun
  stage "warm rerun" chain_warm.log "$PY" -m nlsim pipeline --pairs annotations/thucnews_tw_pairs.tsv \
    --corpus data/thucnews.parquet --out "$WORK/report" --model-store "$WORK/models"
fi
grep -E "first report|time left|estimated|more \(|done in|elapsed" "$OUTDIR/chain_cold.log" | grep -v "^{" | head -n 12 |
  sed 's/^/    /' >> "$SUMMARY"
"$PY" - "$WORK" >> "$SUMMARY" 2>&1 <<'EOF'
import json, sys
from pathlib import Path
work = Path(sys.argv[1])
for p in sorted(work.glob("*/report/pipeline.json")):  # the further cold chains: times and figures
    rec = json.loads(p.read_text())
    f1 = (rec.get("judge") or {}).get("f1")
    print(f"- {p.parent.parent.name}: {rec['candidate']['version']}, F1 {f1}, timings_s {json.dumps(rec['timings_s'])}")
p = work / "report" / "pipeline.json"
if p.is_file():
    rec = json.loads(p.read_text())
    def walk(d, path=""):
        for k, v in d.items():
            here = f"{path}.{k}" if path else k
            if isinstance(v, dict) and here.count(".") < 3:
                walk(v, here)
            elif any(w in k for w in ("second", "f1", "precision", "recall", "spearman", "threshold", "version", "promot")):
                print(f"- {here}: {json.dumps(v, ensure_ascii=False)[:200]}")
    walk(rec)
run = work / "report" / "run.json"
if run.is_file():
    r = json.loads(run.read_text())
    print(f"- report inference: {json.dumps(r.get('inference'))[:400]}")
for guard in sorted([*(work / "models").glob("versions/*/**/quality_check.json"), *(work / "models").glob("versions/*/**/precision.json")]):
    g = json.loads(guard.read_text())
    verdicts = {k: v.get("verdict", v.get("passed")) for k, v in g.get("paths", {}).items()}
    print(f"- quality check {guard.relative_to(work)}: {json.dumps(verdicts, ensure_ascii=False)}")
EOF
if [ "${GPU_CHECK_SEARCH:-1}" != 0 ]; then
  say ""
  say "## FAISS on the GPU, 1M vectors"
  stage "search benchmark" bench_search.log "$PY" benchmarks/bench_gpu.py search --n 1000000 --out "$OUTDIR/gpu_search.json"
fi
if [ "${GPU_CHECK_EMBED:-1}" != 0 ]; then
  say ""
  say "## Embedding: nlsim against sentence-transformers, same GPU and weights"
  stage "embedding benchmark" bench_embed.log "$PY" benchmarks/bench_gpu.py embed --n 50000 --out "$OUTDIR/gpu_embed.json"
fi
if [ "${GPU_CHECK_PROFILE:-0}" != 0 ]; then
  say ""
  say "## The cold chain under cProfile (chain_profile.txt)"
  rm -rf "$WORK/home" "$WORK/profiled"
  # cProfile's own `-m` runs the module and exits 0 whatever it exited with: this keeps the exit status
  stage "profiled cold chain" chain_profiled.log "$PY" -c '
import cProfile, runpy, sys
out, sys.argv = sys.argv[1], ["nlsim", *sys.argv[2:]]
profile, status = cProfile.Profile(), 0
try:
    profile.runcall(runpy.run_module, "nlsim", run_name="__main__", alter_sys=True)
except SystemExit as stop:
    status = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
profile.dump_stats(out)
sys.exit(status)' "$OUTDIR/chain.prof" pipeline --pairs annotations/thucnews_tw_pairs.tsv \
    --corpus data/thucnews.parquet --out "$WORK/profiled/report" --model-store "$WORK/profiled/models"
  "$PY" -c 'import pstats, sys; s = pstats.Stats(sys.argv[1]); s.sort_stats("cumulative").print_stats(120); s.sort_stats("tottime").print_stats(60)' \
    "$OUTDIR/chain.prof" > "$OUTDIR/chain_profile.txt" 2>&1
fi
"$PY" - "$OUTDIR" >> "$SUMMARY" 2>&1 <<'EOF'
import json, sys
from pathlib import Path
for name in ("gpu_embed.json", "gpu_search.json"):
    p = Path(sys.argv[1]) / name
    if not p.is_file():
        continue
    rec = json.loads(p.read_text())
    print(f"\n{name}: {rec.get('gpu')}, n={rec.get('n')} {rec.get('note', '')}")
    for row in rec.get("rows", []):
        print("- " + ", ".join(f"{k} {v}" for k, v in row.items()))
EOF
if [ "$failed" -gt 0 ]; then
  echo "summary: $SUMMARY ($failed stage$([ "$failed" -gt 1 ] && echo s) failed)"
  exit 1
fi
echo "summary: $SUMMARY"
