"""scripts/gpu-rehearsal.sh at tiny scale on CPU (issue 34): the real CLI, the real hf engine on the
tiny random model, one ASB scenario of one category, so the script is known to work before a GPU."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from localbench.serving.presets import load_preset

REPO = Path(__file__).resolve().parent.parent


def test_rehearsal_script_writes_its_table_at_tiny_scale(tmp_path, tiny_dir):
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1",
           "LB_REHEARSAL_PRESET": "tiny-random", "LB_REHEARSAL_ENGINE": "hf", "LB_REHEARSAL_BENCHMARKS": "asb",
           "LB_REHEARSAL_LIMIT": "1", "LB_REHEARSAL_ASB_LEVELS": "L0", "LB_REHEARSAL_BASELINE": "0",
           "LB_REHEARSAL_SIMULATE_ARGS": "--categories CD --max-rounds 1 --max-tokens 16",
           "LB_REHEARSAL_OUT": str(tmp_path / "out")}
    r = subprocess.run(["bash", str(REPO / "scripts" / "gpu-rehearsal.sh")], env=env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 0, r.stdout + r.stderr
    (row,) = json.loads((tmp_path / "out" / "rehearsal.json").read_text())
    assert row["benchmark"] == "asb" and row["calls"] > 0 and row["judgments"] > 0
    assert row["tokens_out_per_s"] > 0 and row["simulate_s"] > 0 and row["judge_s"] > 0
    assert row["gpu_memory_mib"] is None and row["efficiency"] is None  # no GPU, no vLLM baseline here
    table = (tmp_path / "out" / "rehearsal.md").read_text()
    assert table.startswith("| benchmark | preset | engine |") and "| asb | tiny-random | hf |" in table


def test_rehearsal_presets_have_the_real_shapes():
    """The weightless presets build a config of the real model's size (parameters to 0.01 B)."""
    from localbench.serving.shapes import SHAPES, parameters

    for name, shape, real in (("rehearsal-llama-3.1-8b", "llama-3.1-8b", 8.03), ("rehearsal-qwen2.5-7b", "qwen2.5-7b", 7.62),
                              ("rehearsal-llama-3.3-70b", "llama-3.3-70b", 70.55)):
        p = load_preset(name)
        assert p.source.kind == "shape" and p.source.shape == shape and p.engine_args["load_format"] == "dummy"
        assert round(parameters(shape), 2) == real == p.size.params_b
        assert SHAPES[shape]["num_attention_heads"] == p.size.heads
    assert load_preset("rehearsal-llama-3.3-70b").tensor_parallel_size == 4


def test_a_rehearsal_preset_materialises_config_and_tokenizer_without_weights(smollm2_dir):
    from transformers import AutoConfig, AutoTokenizer

    from localbench.serving.weights import materialize

    d = Path(materialize(load_preset("rehearsal-qwen2.5-7b")))
    assert not list(d.glob("*.safetensors"))
    cfg = AutoConfig.from_pretrained(d)
    assert (cfg.model_type, cfg.num_attention_heads, cfg.num_key_value_heads, cfg.vocab_size) == ("qwen2", 28, 4, 152064)
    assert len(AutoTokenizer.from_pretrained(d)) <= cfg.vocab_size  # every token id is inside the model's vocabulary
