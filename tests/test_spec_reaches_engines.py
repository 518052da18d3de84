"""Every spec field that reaches an engine reaches it (issue 47): each field is set in a RunSpec,
the role's client is opened the way a run opens it (``runtime.clients.client_for``), and the value
is read back from the engine's own settings object: the ``AsyncEngineArgs`` vLLM is started with,
the hf engine's batcher, prefix cache and grammar, the openai client's bound, timeouts and headers.
Not from the helper that builds them (a field the helper took but the run path never passed is
what this catches: ``serving.max_batch_size`` never reached vLLM). One test per engine per field."""

from __future__ import annotations

import asyncio

import pytest

from localbench.runtime.clients import check_models, client_for
from localbench.serving.device import Device
from localbench.spec import RunSpec

H100 = Device("cuda", "NVIDIA H100 80GB HBM3", 79.2, (9, 0), 1)


def _spec(tmp_path, serving: dict, models: dict | None = None) -> RunSpec:
    return RunSpec(benchmark="asb", out=str(tmp_path), no_cache=True, serving=serving,
                   models=models or {"agent": "tiny-random"})


# ---- hf: the real engine on the tiny model -------------------------------------------------------

@pytest.fixture
def hf_backend(tmp_path):
    opened = []

    def open_(serving: dict):
        client = client_for(_spec(tmp_path, {"engine": "hf", **serving}), "agent", tmp_path)
        opened.append(client)
        return client.backend

    yield open_
    for c in opened:
        asyncio.run(c.aclose())


@pytest.mark.parametrize("field,value,read", [
    ("max_batch_size", 3, lambda b: b._batcher.max_batch_size),
    ("prefix_cache_gb", 0.0, lambda b: b.prefixes.max_tokens),
    ("grammar", "outlines", lambda b: b.grammar.name),
])
def test_a_field_reaches_the_hf_engine(hf_backend, field, value, read):
    backend = hf_backend({field: value})
    assert read(backend) == (0 if field == "prefix_cache_gb" else value)


def test_batch_invariance_reaches_the_hf_engine(hf_backend):
    backend = hf_backend({"batch_invariant": True})
    assert (backend._batcher.max_batch_size, backend.prefixes.max_tokens) == (1, 0)


# ---- vllm: the AsyncEngineArgs vLLM is started with, on a simulated H100 --------------------------

class _Started(Exception):
    """Raised by the stand-in for AsyncLLM.from_engine_args once it has the engine's arguments."""


@pytest.fixture
def vllm_args(monkeypatch, tmp_path):
    pytest.importorskip("vllm")
    from vllm.v1.engine.async_llm import AsyncLLM

    from localbench.serving import availability, session

    seen = []

    def start(engine_args, **_):
        seen.append(engine_args)
        raise _Started

    monkeypatch.setattr(AsyncLLM, "from_engine_args", staticmethod(start))
    monkeypatch.setattr(session, "detect_device", lambda: H100)
    monkeypatch.setattr("localbench.serving.device.detect", lambda: H100)
    monkeypatch.setattr("localbench.serving.weights.materialize", lambda preset: str(tmp_path))
    monkeypatch.setattr(availability, "check", lambda preset, has_cuda=None: availability.Availability(True, "ok", ["vllm"]))

    def args_of(serving: dict, models: dict | None = None, role: str = "agent"):
        spec = _spec(tmp_path, {"engine": "vllm", **serving}, models)
        with pytest.raises(Exception) as e:  # the stand-in stops the start once it has the arguments
            client_for(spec, role, tmp_path, engines=check_models(spec))
        assert isinstance(e.value.__cause__ or e.value, _Started), e.value
        return seen[-1]

    return args_of


def test_max_batch_size_reaches_vllm(vllm_args):
    assert vllm_args({"max_batch_size": 96}).max_num_seqs == 96
    assert vllm_args({}).max_num_seqs == 1024  # unset: what `vllm serve` picks on the card


def test_a_memory_share_reaches_vllm(vllm_args):
    models = {"agent": "qwen2.5-7b-instruct", "user_sim": "llama-3.1-8b-instruct"}
    assert vllm_args({}, models, "user_sim").gpu_memory_utilization == 0.45
    assert vllm_args({}, {"agent": "qwen2.5-7b-instruct", "judge": "llama-3.1-8b-instruct"},
                     "judge").gpu_memory_utilization == 0.85  # alone in its stage


# ---- openai: the client's own bound, timeouts and headers ------------------------------------------

@pytest.mark.parametrize("field,value,read", [
    ("max_concurrency", 7, lambda b: (b.max_concurrency, b._sem._value)),
    ("request_timeout_s", 123.0, lambda b: b.timeout),
    ("first_byte_timeout_s", 9.0, lambda b: b.first_byte_timeout),
    ("base_url", "http://127.0.0.1:9/v1", lambda b: b.base_url),
])
def test_a_field_reaches_the_openai_engine(tmp_path, field, value, read):
    serving = {"engine": "openai", "base_url": "http://127.0.0.1:9/v1", field: value}
    backend = client_for(_spec(tmp_path, serving), "agent", tmp_path).backend
    assert read(backend) == ((value, value) if field == "max_concurrency" else value)


def test_the_api_key_reaches_the_openai_engine(tmp_path, monkeypatch):
    monkeypatch.setenv("LB_KEY_FOR_TEST", "k3y")
    serving = {"engine": "openai", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "LB_KEY_FOR_TEST"}
    backend = client_for(_spec(tmp_path, serving), "agent", tmp_path).backend
    assert backend._headers == {"Authorization": "Bearer k3y"}


def test_a_roles_own_server_reaches_its_client(tmp_path):
    serving = {"engine": "openai", "base_url": "http://127.0.0.1:9/v1", "base_urls": {"user_sim": "http://127.0.0.1:8/v1"}}
    spec = _spec(tmp_path, serving, {"agent": "tiny-random", "user_sim": "smollm2-135m"})
    assert client_for(spec, "user_sim", tmp_path).backend.base_url == "http://127.0.0.1:8/v1"


# ---- every engine: the client's retries ----------------------------------------------------------

def test_max_retries_reaches_the_client(tmp_path):
    serving = {"engine": "openai", "base_url": "http://127.0.0.1:9/v1", "max_retries": 5}
    assert client_for(_spec(tmp_path, serving), "agent", tmp_path).max_retries == 5


def test_every_engine_field_of_the_spec_is_covered_here():
    """A new serving field gets a test here (or is named as not reaching an engine)."""
    from localbench.spec import EngineOptions

    not_engine = {"engine", "judge_base_url", "preflight"}  # the engine's choice, the judge's URL (spec.url_for), the run's check
    covered = {"max_batch_size", "prefix_cache_gb", "grammar", "batch_invariant", "max_concurrency", "request_timeout_s",
               "first_byte_timeout_s", "base_url", "api_key_env", "base_urls", "max_retries"}
    assert set(EngineOptions.model_fields) == covered | not_engine
