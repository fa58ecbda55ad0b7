#!/usr/bin/env bash
# usage: bash scripts/setup.sh [--all-bytecode] [--no-model] [--help]
# Create (or update) the project's virtual environment in .venv and install nlsim with its bundled models.
# Idempotent: a second run only checks that everything is installed. Says what it does at each step; the
# installer's own output is cut to one line a package (no progress bars: they flood a log file).
# The packages are installed with uv (put into .venv by pip first): the same versions pip resolves, in about
# half the time (docs/measurements.md, "Set-up"); where uv cannot install them, pip does, as before.
# NLSIM_SETUP_INSTALLER=pip installs with pip alone. The default model is converted into $NLSIM_HOME last
# (--no-model: not).
# PYTHON names the Python .venv is made with (default python3; 3.11 or 3.12, as pyproject.toml requires): another
# one, or a .venv made with one (or with a Python since removed), is refused before anything is installed,
# with what to do; a .venv made with another supported version is kept, and the set-up says so.
# Bytecode: what nlsim imports is compiled as it is installed (scripts/compile_imports.py); --all-bytecode
# compiles the other installed packages too (once), as the tests and Prefect's server read them (test.sh).
set -euo pipefail
# a relative path in NLSIM_HOME, PREFECT_HOME or PYTHON (one with a /) is the caller's folder's: made whole
# before the cd below (a command name, an absolute path and ~/... are left as they are)
case ${NLSIM_HOME:-/} in /* | "~"*) ;; *) export NLSIM_HOME=$PWD/${NLSIM_HOME#./} ;; esac
case ${PREFECT_HOME:-/} in /* | "~"*) ;; *) export PREFECT_HOME=$PWD/${PREFECT_HOME#./} ;; esac
case ${PYTHON:-/} in /* | "~"*) ;; */*) export PYTHON=$PWD/${PYTHON#./} ;; esac
cd "$(dirname "$0")/.."
step() { echo "setup: $*"; }
keep_lines() {  # one line a package and the errors (not this machine's per-package notices), indented
  grep --line-buffered -P '^(Collecting|Successfully|ERROR|error|WARNING: (?!.*is ignored)| \+ |Installed|Resolved|Bytecode| *[×╰])' |
    sed -u "s/^ *+ */  $1: + /; t; s/^/  $1: /" || true
}
pip_lines() { "$@" --progress-bar off 2>&1 | keep_lines pip; }
uv_lines() { "$@" 2>&1 | keep_lines uv; }
pip_setting() {  # a setting of pip's configuration (environment or files), empty where none; a value
  # written on several lines in pip.conf (pip lists it with \n between them) as words
  .venv/bin/python -m pip config list 2>/dev/null | sed -n "s/^[a-z:.]*$1='\(.*\)'$/\1/p" | tail -1 |
    sed 's/\\n/ /g; s/^ *//; s/ *$//'
}
uv_install() {  # uv pip install ARGS into .venv, with the wheel folder and the indexes pip is configured
  # with (uv does not read pip's configuration; torch's CPU wheel lies in the folder, a private index may
  # hold every package); bytecode: scripts/compile_imports.py, after
  local args=(--python .venv/bin/python) links index extra link url
  links=${PIP_FIND_LINKS:-$(pip_setting find-links)}
  index=${PIP_INDEX_URL:-$(pip_setting index-url)}
  extra=${PIP_EXTRA_INDEX_URL:-$(pip_setting extra-index-url)}
  for link in $links; do args+=(--find-links "$link"); done
  if [ -n "$index" ]; then args+=(--index-url "$index"); fi
  for url in $extra; do args+=(--extra-index-url "$url"); done
  # pip takes each package's best version from all the indexes; uv, from the first that has it, unless told
  if [ -n "$extra" ]; then args+=(--index-strategy unsafe-best-match); fi
  uv_lines .venv/bin/uv pip install "${args[@]}" "$@"
}
install() {  # install ARGS with uv, or with pip where uv is not wanted or fails
  if [ "${NLSIM_SETUP_INSTALLER:-uv}" = uv ] && [ -x .venv/bin/uv ]; then
    uv_install "$@" && return 0
    step "uv could not install these; pip installs them instead"
  fi
  pip_lines .venv/bin/python -m pip install "$@"
}
# what nlsim never imports: the packages' own tests, transformers' other model families, the installers
SKIP_COMPILE='/tests?/|/transformers/models/(?!(auto|bert|xlm_roberta|roberta|align|encoder_decoder)/)|/site-packages/(pip|setuptools)/'
compile_bytecode() {  # every installed package's bytecode, as pip writes it, less SKIP_COMPILE (a third of
  # the files; those are compiled when imported). A file this Python cannot compile (a newer syntax in a
  # test helper) is left as pip leaves it: compileall then exits 1, which counts as done; any other failure
  # (compileall killed) does not
  local purelib rc=0
  purelib=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  .venv/bin/python -m compileall -q -j 0 -x "$SKIP_COMPILE" "$purelib" > /dev/null 2>&1 || rc=$?
  [ "$rc" -le 1 ]
}
all_bytecode=0 unpack_model=1
for arg in "$@"; do
  case $arg in
    --all-bytecode) all_bytecode=1 ;;
    --no-model) unpack_model=0 ;;
    -h | --help) sed -n '2,/^set -euo/{/^set -euo/d; s/^# \{0,1\}//; p}' scripts/setup.sh; exit 0 ;;
    *) echo "setup: unknown option $arg (known: --all-bytecode, --no-model, --help)" >&2; exit 2 ;;
  esac
done
PY=${PYTHON:-python3}
NEED="Python 3.11 or 3.12"  # pyproject.toml's requires-python
py_version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || true; }
supported() { case $1 in 3.11 | 3.12) return 0 ;; *) return 1 ;; esac; }
said() {  # PY VERSION: what PY is, or why it does not run
  if [ -n "$2" ]; then echo "$1 is Python $2"
  elif [ -L "$1" ] && [ ! -e "$1" ]; then
    echo "$1 is a link to $(readlink -m "$1" 2>/dev/null || readlink "$1"), which is gone"
  else echo "$1 does not run"; fi
}
start=$SECONDS
# a .venv whose python is a link to nothing (the Python it was made with removed or moved) is named below:
# `python3 -m venv` over it keeps such links and fails
if [ ! -x .venv/bin/python ] && [ ! -L .venv/bin/python ]; then
  if ! command -v "$PY" > /dev/null 2>&1; then
    echo "setup: $PY not found; nlsim needs $NEED: install one, or name it with PYTHON" \
      "(e.g. PYTHON=python3.11 bash run.sh)" >&2
    exit 2
  fi
  version=$(py_version "$PY")
  if ! supported "$version"; then
    echo "setup: $(said "$PY" "$version"); nlsim needs $NEED: install one, or name it" \
      "with PYTHON (e.g. PYTHON=python3.11 bash run.sh)" >&2
    exit 2
  fi
  step "creating .venv with $("$PY" --version)"
  "$PY" -m venv .venv
else
  version=$(py_version .venv/bin/python)
  if ! supported "$version"; then
    echo "setup: $(said .venv/bin/python "$version"); nlsim needs $NEED: remove .venv" \
      "(rm -rf .venv), then run again (PYTHON=python3.11 names the Python to make it with)" >&2
    exit 2
  fi
  wanted=$(if [ -n "${PYTHON:-}" ]; then py_version "$PY"; fi)  # a Python named for a .venv already made
  if [ -n "$wanted" ] && [ "$wanted" != "$version" ]; then
    step ".venv was made with Python $version and is kept: PYTHON=$PY (Python $wanted) makes .venv only" \
      "where there is none: remove .venv (rm -rf .venv), then run again to make it with that one"
  fi
fi
stamp=.venv/.nlsim-installed
# what is installed, and where: a moved clone's editable install and .venv/bin/nlsim name the old folder
inputs=(pyproject.toml requirements/constraints.txt requirements/no-deps.txt scripts/setup.sh)
want=$({ cat "${inputs[@]}" && pwd -P; } | sha256sum | cut -c1-16)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  if ! .venv/bin/python -m pip --version > /dev/null 2>&1; then  # a .venv made without pip (Debian's venv
    # without python3.X-venv leaves one): pip's own bootstrap puts it in, or the user is told what to do
    step "putting pip into .venv (it has none)"
    if ! .venv/bin/python -m ensurepip --upgrade > /dev/null 2>&1; then
      echo "setup: .venv/bin/python has no pip and cannot install it (ensurepip is missing): remove .venv" \
        "(rm -rf .venv), install your Python's venv package (Debian, Ubuntu: apt install python$version-venv)," \
        "then run again" >&2
      exit 2
    fi
  fi
  if [ "${NLSIM_SETUP_INSTALLER:-uv}" = uv ]; then
    step "1/3 installing the installer (uv) into .venv with pip"
    pip_lines .venv/bin/python -m pip install 'uv>=0.5,<1' ||
      step "uv did not install; pip installs everything"
  else
    step "1/3 upgrading pip"
    pip_lines .venv/bin/python -m pip install --upgrade pip
  fi
  # torch is pinned to the CPU build that lies in the wheel folder pip is configured with (see pyproject.toml)
  # at the versions the suite ran on (requirements/constraints.txt), not the registry's newest
  step "2/3 installing nlsim, its dependencies and bundled models (.[cpu,dev,interop]; a minute or two the first time)"
  install -e '.[cpu,dev,interop]' -c requirements/constraints.txt
  step "3/3 installing data-only packages without their stale requirements (requirements/no-deps.txt)"
  install --no-deps --require-hashes -r requirements/no-deps.txt
  step "compiling the bytecode of what nlsim imports"
  .venv/bin/python scripts/compile_imports.py | sed -u "s/^/  /" || step "(bytecode left to the first import)"
  echo "$want" > "$stamp"
  step "installed in $((SECONDS - start)) s"
fi
all_stamp=.venv/.nlsim-all-bytecode
if [ "$all_bytecode" = 1 ] && [ "$(cat "$all_stamp" 2>/dev/null)" != "$want" ]; then
  step "compiling the other packages' bytecode (not their tests, nor the model families nlsim does not load)"
  compile_start=$SECONDS
  if compile_bytecode; then
    echo "$want" > "$all_stamp"
    step "compiled in $((SECONDS - compile_start)) s"
  else
    step "the compile stopped after $((SECONDS - compile_start)) s; the rest compiles when imported"
  fi
fi
export PREFECT_HOME=${PREFECT_HOME:-$PWD/.prefect}
# The default model's fp32 folder, converted once from the 4-bit file its package bundles into
# $NLSIM_HOME/models (about 10 s the first time, a check of its files after; docs/encoders.md, "Caching"):
# the main job then starts from it, its first report sooner; the job converts it itself where this could
# not. --no-model: not (the tests convert it into their own home)
check='import nlsim, torch, faiss
print(f"setup: ready (nlsim {nlsim.__version__} torch {torch.__version__} faiss {faiss.__version__})")'
if [ "$unpack_model" = 1 ]; then  # one interpreter: the check's imports are the conversion's too
  step "the default model's files (converted the first time)"
  check="import sys, time
from nlsim.encoders.registry import registry_folder
from nlsim.errors import ConfigError, NlsimError
from nlsim.training.config import DEFAULT_BASE
began = time.perf_counter()
try:
    folder = registry_folder(DEFAULT_BASE)
    print(f'setup: the default model in {folder} ({time.perf_counter() - began:.0f} s)', flush=True)
except ConfigError as exc:  # a NLSIM_HOME that cannot be a folder: nlsim refuses it too, the job would not run
    print(f'setup: the default model was not converted: {exc}; every nlsim command refuses it as well: '
          'set NLSIM_HOME to a folder, or unset it (default ~/.cache/nlsim)', file=sys.stderr, flush=True)
    sys.exit(2)
except (OSError, NlsimError) as exc:  # the machine's (room, rights, a package): the job converts it itself
    print(f'setup: the default model was not converted ({exc}); the main job converts it when it starts',
          file=sys.stderr, flush=True)
$check"
fi
.venv/bin/python -c "$check"
