"""Timeouts a user controls (#33): a server that accepts connections and never answers is named in one
line within a minute by default; a slow but live one is waited on, with a line saying so; the
request timeout is a flag and a spec field; retries are counted and shown."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from localbench.serving import openai_engine
from localbench.serving.openai_engine import OpenAIBackend, ServerNotAnswering
from localbench.serving.types import EngineError, GenerationRequest, ModelIdentity
from localbench.spec import load_spec


@pytest.fixture
def accept_only():
    """A socket that takes connections (the kernel completes them) and never reads or answers."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    yield f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    s.close()


class _Slow(BaseHTTPRequestHandler):
    """/health at once; a chat completion after ``delay`` seconds (None: never)."""

    delay: float | None = 0.0

    def log_message(self, *a):  # quiet
        pass

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.delay is None:
            time.sleep(30)
            return
        time.sleep(self.delay)
        body = json.dumps({"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def slow_server():
    servers = []

    def start(delay: float | None) -> str:
        handler = type("Handler", (_Slow,), {"delay": delay})
        srv = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}/v1"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


def _backend(url: str, **kw) -> OpenAIBackend:
    return OpenAIBackend(url, "m", ModelIdentity(preset="m", source="m", revision="r"), max_model_len=512,
                         backoff_s=0.05, backoff_max_s=0.1, **kw)


def _request() -> GenerationRequest:
    return GenerationRequest(messages=[{"role": "user", "content": "hi"}], max_tokens=8, temperature=0.0, seed=0)


def _complete(b: OpenAIBackend):
    async def go():
        try:
            return await b.complete(_request())
        finally:
            await b.aclose()

    return asyncio.run(go())


def test_an_accept_only_server_is_named_after_the_first_byte_limit_without_retries(accept_only):
    b = _backend(accept_only, first_byte_timeout=1.0)
    t0 = time.monotonic()
    with pytest.raises(ServerNotAnswering) as e:
        _complete(b)
    assert time.monotonic() - t0 < 10
    msg = str(e.value)
    assert "\n" not in msg and accept_only in msg and "sent nothing" in msg and "--first-byte-timeout" in msg
    assert b.retries == 0  # a hung server is not asked six more times


def test_a_slow_live_server_is_waited_on_with_a_line_saying_so(slow_server, monkeypatch, capsys):
    monkeypatch.setattr(openai_engine, "WAIT_NOTE_EVERY_S", 1.0)
    url = slow_server(3.0)
    b = _backend(url, first_byte_timeout=1.0)  # silent past the limit, but /health answers: not hung
    out = _complete(b)
    assert out.text == "hi" and b.retries == 0
    assert f"waiting on {url}/chat/completions for " in capsys.readouterr().err


def test_the_request_timeout_is_retried_and_the_retries_are_counted_and_shown(slow_server, capsys):
    url = slow_server(None)
    b = _backend(url, timeout=1.5, first_byte_timeout=1.0, max_attempts=2)
    with pytest.raises(EngineError) as e:
        _complete(b)
    assert not isinstance(e.value, ServerNotAnswering)
    assert "after 2 attempts (1 retries)" in str(e.value) and "request timeout 1.5 s" in str(e.value)
    assert b.retries == 1 and "retry 1 of 1 for" in capsys.readouterr().err


def test_the_timeouts_are_spec_fields_and_flags_and_not_part_of_the_run_id():
    spec = load_spec(None, **{"serving.request_timeout_s": 5, "serving.first_byte_timeout_s": 2})
    assert spec.serving.request_timeout_s == 5 and spec.serving.first_byte_timeout_s == 2
    assert spec.resolved_run_id == load_spec(None).resolved_run_id  # where a server is reached is not a result
    with pytest.raises(Exception, match="serving.first_byte_timeout_s"):
        load_spec(None, **{"serving.first_byte_timeout_s": 0})


def test_an_accept_only_server_is_named_within_60_s_by_default_in_one_line(accept_only, tmp_path, tiny_dir):
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "localbench.cli", "run", "--agent", "tiny-random", "--engine",
                        "openai", "--base-url", accept_only, "--limit", "1", "--categories", "CD", "--conditions", "L0",
                        "--out", str(tmp_path), "--no-progress"],
                       capture_output=True, text=True, timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    took = time.monotonic() - t0
    errors = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    assert r.returncode == 1 and len(errors) == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert accept_only.removesuffix("/v1") in errors[0] and "sent nothing" in errors[0]
    assert took < 60, took
