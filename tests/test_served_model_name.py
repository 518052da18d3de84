"""A served model is named by its preset: `localbench serve` serves it under the preset's name and
the openai engine sends that name without building or reading the weights; a server started by
hand under the hub repo id is still found; `serve --host 0.0.0.0` prints this machine's name."""

from __future__ import annotations

import json
import signal
import socket

import httpx
import pytest

from localbench.serving.openai_engine import OpenAIBackend
from localbench.serving.presets import ModelSource, Preset, load_preset
from localbench.serving.types import EngineError, GenerationRequest

REPO = "example-org/example-model"
MSGS = [{"role": "user", "content": "hi"}]


def _hub() -> Preset:
    return Preset(name="hub-model", source=ModelSource(kind="hf-hub", repo=REPO, revision="abc"))


def _ok(content: str = "{}") -> dict:
    return {"choices": [{"message": {"content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1}}


class FakeServer:
    """An OpenAI-compatible server serving one model name (vLLM's behaviour for another name: 404)."""

    def __init__(self, served: str):
        self.served = served
        self.sent: list[str] = []
        self.model_lists = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/models":
            self.model_lists += 1
            return httpx.Response(200, json={"object": "list", "data": [{"id": self.served, "object": "model"}]})
        name = json.loads(request.content)["model"]
        self.sent.append(name)
        if name != self.served:
            return httpx.Response(404, json={"error": {"message": f"The model `{name}` does not exist.",
                                                       "type": "NotFoundError", "code": 404}})
        return httpx.Response(200, json=_ok())


@pytest.fixture
def no_weights(monkeypatch):
    """Building or locating weights fails: the openai engine must not need them."""
    import localbench.serving.weights as weights

    def refuse(preset):
        raise AssertionError(f"materialize({preset.name}) called by a client of a server")

    monkeypatch.setattr(weights, "materialize", refuse)


async def test_openai_engine_sends_the_preset_name_without_weights(no_weights):
    srv = FakeServer("tiny-random")
    backend = OpenAIBackend.from_preset(load_preset("tiny-random"), base_url="http://gpu-node:8000/v1",
                                        transport=httpx.MockTransport(srv), backoff_s=0.01)
    assert backend.model == "tiny-random" and backend.identity.preset == "tiny-random"
    await backend.complete(GenerationRequest(messages=MSGS))
    assert srv.sent == ["tiny-random"] and srv.model_lists == 0
    await backend.aclose()


def test_openai_identity_is_the_same_on_every_host(no_weights):
    a = OpenAIBackend.from_preset(_hub(), base_url="http://gpu-node:8000/v1")
    b = OpenAIBackend.from_preset(_hub(), base_url="http://other:9000")
    assert a.identity == b.identity and a.identity.source == REPO and a.identity.preset == "hub-model"


async def test_a_server_started_by_hand_under_the_repo_id_is_found(no_weights):
    srv = FakeServer(REPO)  # `vllm serve example-org/example-model`
    backend = OpenAIBackend.from_preset(_hub(), base_url="http://gpu-node:8000/v1",
                                        transport=httpx.MockTransport(srv), backoff_s=0.01)
    results = [await backend.complete(GenerationRequest(messages=MSGS)) for _ in range(3)]
    assert all(r.finish_reason == "stop" for r in results)
    assert backend.model == REPO and srv.model_lists == 1
    assert srv.sent == ["hub-model", REPO, REPO, REPO]  # one 404, then the served name for good
    await backend.aclose()


async def test_an_explicit_model_name_is_sent_as_given(no_weights):
    srv = FakeServer("my-name")
    backend = OpenAIBackend.from_preset(_hub(), base_url="http://gpu-node:8000/v1", model="my-name",
                                        transport=httpx.MockTransport(srv))
    await backend.complete(GenerationRequest(messages=MSGS))
    assert srv.sent == ["my-name"]
    other = OpenAIBackend.from_preset(_hub(), base_url="http://gpu-node:8000/v1", model="not-served",
                                      transport=httpx.MockTransport(srv))
    with pytest.raises(EngineError, match="not-served"):
        await other.complete(GenerationRequest(messages=MSGS))
    assert srv.model_lists == 0  # no guessing around an explicit name
    await backend.aclose()
    await other.aclose()


async def test_a_server_serving_none_of_the_names_fails_with_a_hint(no_weights):
    srv = FakeServer("something-else")
    backend = OpenAIBackend.from_preset(_hub(), base_url="http://gpu-node:8000/v1",
                                        transport=httpx.MockTransport(srv), backoff_s=0.01)
    with pytest.raises(EngineError) as e:
        await backend.complete(GenerationRequest(messages=MSGS))
    assert "HTTP 404" in str(e.value) and "--served-model-name hub-model" in str(e.value)
    assert srv.sent == ["hub-model"] and srv.model_lists == 1
    await backend.aclose()


def test_openai_identity_follows_local_weights_and_the_packaged_gguf(tmp_path, no_weights):
    """Edited local weights, or another version of the package shipping a GGUF, are another model
    to the response cache even though the client never loads them."""
    from localbench.serving.weights import declared_identity

    d = tmp_path / "ckpt"
    d.mkdir()
    (d / "config.json").write_text('{"hidden_size": 8}')
    local = Preset(name="mine", source=ModelSource(kind="local", path=str(d)))
    before = declared_identity(local)
    (d / "config.json").write_text('{"hidden_size": 16}')
    assert declared_identity(local).revision != before.revision
    gguf = declared_identity(load_preset("smollm2-135m"))
    assert gguf.revision.startswith("pypi-gguf:") and gguf.revision != "pypi-gguf:unknown"


def test_server_serves_the_model_under_the_preset_name(tiny_dir):
    from localbench.serving.server import VLLMServer

    srv = VLLMServer("tiny-random", port=8123, on_cpu=True, location=str(tiny_dir))
    cmd = srv.command()
    assert cmd[cmd.index("--model") + 1] == str(tiny_dir)
    assert cmd[cmd.index("--served-model-name") + 1] == "tiny-random" == srv.model
    assert srv.backend().model == "tiny-random"


def test_public_host_names_this_machine_for_a_wildcard():
    from localbench.serving.server import public_host

    assert public_host("0.0.0.0") == socket.gethostname() == public_host("::")
    assert public_host("127.0.0.1") == "127.0.0.1" and public_host("gpu-node") == "gpu-node"


def test_serve_on_all_interfaces_prints_a_url_with_this_machines_name(monkeypatch):
    """`localbench serve PRESET --host 0.0.0.0` without starting vLLM: the server is faked as
    started and then gone, so the command prints its lines and ends."""
    from typer.testing import CliRunner

    from localbench.cli import app
    from localbench.serving import server as server_mod

    monkeypatch.setattr(server_mod.VLLMServer, "start", lambda self: self)
    monkeypatch.setattr(server_mod.VLLMServer, "running", property(lambda self: False))
    monkeypatch.setattr(server_mod.VLLMServer, "location", property(lambda self: "/nowhere"), raising=False)
    before = signal.getsignal(signal.SIGTERM)
    try:
        r = CliRunner().invoke(app, ["serve", "tiny-random", "--host", "0.0.0.0", "--port", "18123"])
    finally:
        signal.signal(signal.SIGTERM, before)
    ready = next(line for line in r.output.splitlines() if line.startswith("ready:"))
    assert f"http://{socket.gethostname()}:18123/v1" in ready and "127.0.0.1" not in ready
    assert "model name: tiny-random" in ready
    assert isinstance(r.exception, EngineError)  # the faked server "exited"
