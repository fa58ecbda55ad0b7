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
# A relative path in the arguments is read from this folder (the job runs here); one in NLSIM_HOME,
# PREFECT_HOME or PYTHON from the folder run.sh is started in.
# `bash run.sh --help`: this text and `nlsim pipeline`'s options, with nothing set up or run.
set -euo pipefail
for arg in "$@"; do  # the help at once: no set-up first (`nlsim pipeline --help` where it is installed)
  case $arg in
    -h | --help)
      sed -n '2,/^set -/s/^# \{0,1\}//p' "$0"
      nlsim="$(dirname "$0")/.venv/bin/nlsim"
      if [ -x "$nlsim" ]; then echo && exec "$nlsim" pipeline --help; fi
      echo "(the options of \`nlsim pipeline\` are listed here once set up: bash scripts/setup.sh)"
      exit 0 ;;
  esac
done
# a relative path in NLSIM_HOME, PREFECT_HOME or PYTHON (one with a /) is the caller's folder's: made whole
# before the cd below (a command name, an absolute path and ~/... are left as they are)
case ${NLSIM_HOME:-/} in /* | "~"*) ;; *) export NLSIM_HOME=$PWD/${NLSIM_HOME#./} ;; esac
case ${PREFECT_HOME:-/} in /* | "~"*) ;; *) export PREFECT_HOME=$PWD/${PREFECT_HOME#./} ;; esac
case ${PYTHON:-/} in /* | "~"*) ;; */*) export PYTHON=$PWD/${PYTHON#./} ;; esac
cd "$(dirname "$0")"
bash scripts/setup.sh
export PREFECT_HOME=${PREFECT_HOME:-$PWD/.prefect} PREFECT_SERVER_ANALYTICS_ENABLED=false DO_NOT_TRACK=1
report=(--corpus data/thucnews.parquet --out reports/thucnews)
for arg in "$@"; do  # --no-report: no report setting (the chain refuses one with it: it would do nothing)
  if [ "$arg" = --no-report ]; then report=(); fi
done
exec .venv/bin/nlsim pipeline --pairs annotations/thucnews_tw_pairs.tsv ${report[@]+"${report[@]}"} \
  --model-store models "$@"
