"""Bad input gets one clear line naming the thing (preset, file, endpoint), not a traceback."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest


def _run(*args: str, timeout: int = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localbench.cli", *args], capture_output=True, text=True,
                          timeout=timeout)


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_unknown_preset_names_the_preset():
    r = _run("generate", "hi", "--model", "no-such-model", "--engine", "hf")
    assert r.returncode == 2
    assert "unknown model preset 'no-such-model'" in r.stderr and "smollm2-135m" in r.stderr
    assert "Traceback" not in r.stderr


def test_malformed_schema_file_names_the_file(tmp_path):
    f = tmp_path / "label.json"
    f.write_text("{ not json")
    r = _run("generate", "hi", "--schema", str(f), "--model", "tiny-random")
    assert r.returncode == 2
    assert f"{f}: not valid JSON" in r.stderr and "Traceback" not in r.stderr


def test_unreachable_endpoint_names_the_endpoint(tmp_path):
    port = _closed_port()
    url = f"http://127.0.0.1:{port}/v1"
    r = _run("generate", "hi", "--model", "tiny-random", "--engine", "openai", "--base-url", url, "--no-cache")
    assert r.returncode == 2, r.stderr
    assert url in r.stderr and "Traceback" not in r.stderr


def test_help_works_without_engines():
    r = _run("--help")
    assert r.returncode == 0 and "generate" in r.stdout and "models" in r.stdout


@pytest.mark.parametrize("field,value", [("models", "[1, 2]"), ("levels", "[]")])
def test_bad_spec_names_file_and_field(tmp_path, field, value):
    from localbench.spec import SpecError, load_spec

    p = tmp_path / "spec.yaml"
    p.write_text(f"{field}: {value}\n")
    with pytest.raises(SpecError, match=rf"spec.yaml: field '{field}"):
        load_spec(p)
