#!/usr/bin/env bash
# GPU self-check of sparring's GPU paths, for an offline GPU machine.
#
#   bash scripts/gpu_check.sh prepare [--kit DIR] [--image FILE]   # on a machine with the package index
#   bash scripts/gpu_check.sh run [--kit DIR] --out DIR             # on the GPU machine, offline (<= 8 min)
#   bash scripts/gpu_check.sh run --cpu --out DIR                   # the same parts at toy size on the CPU (CI)
#
# prepare: the wheels the GPU image lacks (Python 3.12, manylinux x86-64, --no-deps) and the bundled
# tokenizer into one git-ignored folder (default gpu_kit/, at most 60 MiB). run: installs the kit's
# wheels into a temporary folder (nothing is installed into the image), then every part in its own
# process under its own time cap; a failing part does not stop the others. Reports: DIR/gpu_check.json,
# DIR/gpu_check.md (DIR defaults to $OUT when set). See docs/gpu.md.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cmd="${1:-}"
shift || true
python="${PYTHON:-python3}"
case "$cmd" in
  prepare)
    cd "$root"
    exec "$python" -m sparring.gpucheck prepare "$@"
    ;;
  run)
    kit="$root/gpu_kit"; out="${OUT:-}"; cpu=""; rest=()
    while [ $# -gt 0 ]; do
      case "$1" in
        --kit) kit="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --cpu) cpu="--cpu"; shift ;;
        *) rest+=("$1"); shift ;;
      esac
    done
    [ -n "$out" ] || { echo "gpu_check.sh run: give --out DIR (or set OUT)" >&2; exit 2; }
    pythonpath="$root"
    if [ -d "$kit/wheels" ] && [ -z "$cpu" ]; then
      site="$(mktemp -d)/site"
      "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$kit"/wheels/*.whl
      pythonpath="$site:$root"
      export SPARRING_CACHE_DIR="${SPARRING_CACHE_DIR:-$(mktemp -d)}"
      mkdir -p "$SPARRING_CACHE_DIR/models"
      cp -r "$kit/tokenizer" "$SPARRING_CACHE_DIR/models/smollm2-135m-tokenizer"
    elif [ -z "$cpu" ]; then
      echo "gpu_check.sh run: no kit at $kit (run 'bash scripts/gpu_check.sh prepare' on a connected machine);" \
           "using the packages installed here" >&2
    fi
    export HF_HUB_OFFLINE=1 PYTHONPATH="$pythonpath${PYTHONPATH:+:$PYTHONPATH}"
    cd "$root"
    exec "$python" -m sparring.gpucheck run --out "$out" $cpu ${rest[@]+"${rest[@]}"}
    ;;
  *)
    echo "usage: bash scripts/gpu_check.sh prepare [--kit DIR] [--image FILE] | run [--kit DIR] [--cpu] --out DIR" >&2
    exit 2
    ;;
esac
