"""Engine choice: an unknown engine is one clear line, and `--engine auto` with a server URL means
the openai engine in `generate` as in `run`/`simulate`."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from localbench.errors import UserError
from localbench.serving.engines import ENGINES, pick_engine
from localbench.serving.presets import load_preset


def _run(*args: str, timeout: int = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localbench.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_opening_the_engine_registry_imports_no_engine():
    """Heavy imports happen only inside the engine that needs them: importing the registry, the hf
    subpackage or the message types loads neither torch, transformers nor vllm."""
    code = ("import sys, localbench.serving, localbench.serving.engines, localbench.serving.hf, "
            "localbench.serving.messages, localbench.runtime.context\n"
            "print(sorted(m for m in ('torch', 'transformers', 'vllm', 'xgrammar') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_pick_engine_unknown_is_a_user_error_listing_the_engines():
    with pytest.raises(UserError) as e:
        pick_engine(load_preset("tiny-random"), "foo")
    assert "unknown engine 'foo'" in str(e.value)
    assert all(name in str(e.value) for name in (*ENGINES, "auto"))


def test_auto_with_a_server_url_is_openai_and_an_explicit_engine_wins():
    p = load_preset("tiny-random")
    assert pick_engine(p, "auto", "http://gpu-node:8000/v1") == "openai"
    assert pick_engine(p, "hf", "http://gpu-node:8000/v1") == "hf"
    assert pick_engine(p, "auto", None) in ("hf", "vllm")


def test_generate_with_an_unknown_engine_is_one_line():
    r = _run("generate", "hi", "--model", "tiny-random", "--engine", "foo")
    assert r.returncode == 2, r.stderr
    assert "unknown engine 'foo'" in r.stderr and "hf, vllm, openai" in r.stderr
    assert "Traceback" not in r.stderr


def test_generate_with_base_url_and_default_engine_uses_the_server():
    """Before: `generate --base-url URL` silently ran the local hf engine and ignored the URL."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed when the block ends: nobody listens there
    url = f"http://127.0.0.1:{port}/v1"
    r = _run("generate", "hi", "--model", "tiny-random", "--base-url", url, "--no-cache", "--max-tokens", "4")
    assert r.returncode == 1, (r.stdout, r.stderr)  # a dead server exits 1 (docs/simulation.md, exit statuses)
    assert url in r.stderr and "Traceback" not in r.stderr
