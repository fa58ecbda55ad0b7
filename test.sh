#!/usr/bin/env bash
# Set everything up and run the whole test suite (slow tests included). Extra arguments go to pytest,
# e.g. `bash test.sh -m "not slow"` for the quick subset. The whole suite (no arguments) then runs the tests
# whose outcome depends on the CPU's instruction sets (marker cpu_features) a second time, with the flags of
# an avx2-only CPU (no avx512, VNNI, bf16 or AMX), so that a suite green here is green on any CPU kind; on a
# CPU whose flags are already those, the first pass was that pass, and it is not repeated.
# `bash test.sh --help`: this text and pytest's options, with nothing set up or run.
set -euo pipefail
# What the arguments ask of this script: its help (-h, --help) and one process (single: they debug, --pdb,
# --trace, -s, as xdist's workers take no debugger and pass no output through, or choose xdist's options
# themselves, -n, -d, --dist, no:xdist; the number of workers is read below). A short option is read also
# among short options given together (-vh, -xs, -vn2), up to one that takes a value: in -rs, -kh or -mslow
# the s or h is that value's
takes_value=kmrWcpon  # pytest's short options (and xdist's -n) that take a value
help=0 single=0
for arg in "$@"; do
  case $arg in
    -h | --help) help=1 ;;
    --pdb | --trace | --capture=no | --numprocesses* | --dist* | *no:xdist) single=1 ;;
    --*) ;;
    -?*)
      flags=${arg#-}
      while [ -n "$flags" ]; do
        flag=${flags:0:1} flags=${flags:1}
        case $flag in h) help=1 ;; s | n | d) single=1 ;; esac
        case $takes_value in *"$flag"*) break ;; esac
      done ;;
  esac
done
if [ "$help" = 1 ]; then  # the help at once: no set-up first (pytest's own where it is installed)
  sed -n '2,/^set -/s/^# \{0,1\}//p' "$0"
  python="$(dirname "$0")/.venv/bin/python"
  if [ -x "$python" ]; then echo && exec "$python" -m pytest --help; fi
  echo "(pytest's options are listed here once set up: bash scripts/setup.sh --all-bytecode --no-model)"
  exit 0
fi
# a relative path in NLSIM_HOME, PREFECT_HOME or PYTHON (one with a /) is the caller's folder's: made whole
# before the cd below (a command name, an absolute path and ~/... are left as they are)
case ${NLSIM_HOME:-/} in /* | "~"*) ;; *) export NLSIM_HOME=$PWD/${NLSIM_HOME#./} ;; esac
case ${PREFECT_HOME:-/} in /* | "~"*) ;; *) export PREFECT_HOME=$PWD/${PREFECT_HOME#./} ;; esac
case ${PYTHON:-/} in /* | "~"*) ;; */*) export PYTHON=$PWD/${PYTHON#./} ;; esac
cd "$(dirname "$0")"
# The tests run in pytest-xdist workers, a test module on one worker (its fixtures' models are then trained
# once); each worker has its own test home, Prefect home and temporary folders, and torch and faiss get the
# cores shared out among the workers (tests/conftest.py). 2 workers where the machine has 2 cores or more:
# on 2 cores the suite took 16-17 min in 2 workers against 27.5 min in one process, much of a process's
# time being one thread's (imports, servers, subprocesses; docs/measurements.md, "The test suite").
# NLSIM_TEST_WORKERS=N sets the number (0 or 1: one process, no workers). Read before the set-up, so that a
# bad value stops at once. One process too when the arguments ask for it (single, above)
cores=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc 2>/dev/null || echo 1)  # nproc obeys OMP_NUM_THREADS
[[ $cores =~ ^[0-9]+$ ]] || cores=1
workers=${NLSIM_TEST_WORKERS:-$((cores >= 2 ? 2 : 1))}
workers=${workers// /}
if ! [[ $workers =~ ^[0-9]+$ ]]; then
  echo "test.sh: NLSIM_TEST_WORKERS='${NLSIM_TEST_WORKERS:-}' is not a number of workers (1: one process)" >&2
  exit 2
fi
workers=$((10#$workers))
if [ "$single" = 1 ]; then workers=1; fi
bash scripts/setup.sh --all-bytecode --no-model  # the tests also read what the main job does not (Prefect's
# server); they convert the default model into their own home
bash scripts/setup_browser.sh  # chromium-headless-shell and fonts-noto-cjk for the report-page tests
export PREFECT_SERVER_ANALYTICS_ENABLED=false DO_NOT_TRACK=1
# the tests' temporary folders (model copies, a session home) go under TMPDIR: say how much room there is,
# so that a run that fills the disk says so at its start, not only in its failures. Python takes the first
# of TMPDIR, TEMP, TMP and /tmp that is a folder it can write in: a TMPDIR that is none is named
tmp=/tmp
for dir in "${TMPDIR:-}" "${TEMP:-}" "${TMP:-}"; do
  if [ -n "$dir" ] && [ -d "$dir" ] && [ -w "$dir" ]; then tmp=$dir && break; fi
done
if [ -n "${TMPDIR:-}" ] && [ "$tmp" != "$TMPDIR" ]; then
  echo "warning: TMPDIR=$TMPDIR is not a folder this user can write in: the tests' temporary folders go to" \
    "$tmp instead (make the folder, or unset TMPDIR)" >&2
fi
echo "free space under $tmp: $(df -Ph "$tmp" | awk 'NR==2 {print $4}')"
# measured (docs/measurements.md): the suite's temporary folders and test home take up to about 2 GB at once
if [ "$(df -Pk "$tmp" | awk 'NR==2 {print $4}')" -lt $((3 * 1024 * 1024)) ]; then
  echo "warning: less than 3 GB free under $tmp; the suite's temporary folders (models, reports," \
    "the test NLSIM_HOME) take up to about 2 GB at once: tests that save a model may fail for want of room" >&2
fi
echo "style: ruff check and ruff format --check"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
xdist=()
if [ "$workers" -gt 1 ]; then
  # --no-loadscope-reorder: the workers take the modules in the collection's order, the slowest first
  # (tests/conftest.py, SLOWEST_FIRST), not xdist's (most tests first, which left the slowest modules last)
  xdist=(-n "$workers" --dist loadfile --no-loadscope-reorder)
fi
if [ $# -gt 0 ]; then
  exec .venv/bin/python -m pytest ${xdist[@]+"${xdist[@]}"} "$@"
fi
# --durations: the slowest tests (and fixtures' set-ups) are listed at the end, to see where the time goes
.venv/bin/python -m pytest ${xdist[@]+"${xdist[@]}"} --durations=30
# the cpu_features tests again as on an avx2-only CPU, unless this CPU is one: where the instruction sets
# nlsim reads (nlsim.inference.cpu.ISA_FLAGS) are the same with and without the override, nlsim makes the
# same choices, and the pass above already ran those tests as on an avx2-only CPU
avx2_flags="avx avx2 fma"
read_flags='from nlsim.inference.cpu import cpu_info; print(" ".join(cpu_info().flags))'
here=$(.venv/bin/python -c "$read_flags")
forced=$(NLSIM_CPU_FLAGS="$avx2_flags" .venv/bin/python -c "$read_flags")
if [ "$here" = "$forced" ]; then
  echo "this CPU's instruction sets (${here:-none that nlsim reads}) are those of an avx2-only CPU: the" \
    "cpu_features tests ran as on one above, so they are not run again"
  exit 0
fi
echo "again as on an avx2-only CPU: the cpu_features tests with NLSIM_CPU_FLAGS='$avx2_flags'" \
  "(this CPU has: $here)"
NLSIM_CPU_FLAGS="$avx2_flags" exec .venv/bin/python -m pytest ${xdist[@]+"${xdist[@]}"} -m cpu_features \
  -p no:cacheprovider
