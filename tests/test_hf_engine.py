"""The hf engine on real models: micro-batching, per-row grammars, seeds, stops, cache replay.

The tiny random Llama (real SmolLM2 tokenizer) proves the plumbing: its text is nonsense, so
a schema-valid reply can only come from the grammar. SmolLM2-135M proves a real model answers.
The MicroBatcher's own logic (caps, grouping, failures, a responsive loop) is tested with a
plain Python runner, since those properties do not depend on the model.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field

from localbench.serving.cache import ResponseCache
from localbench.serving.client import StructuredClient
from localbench.serving.hf.batcher import MicroBatcher
from localbench.serving.output import OutputSpec
from localbench.serving.types import Backend, GenerationRequest

pytestmark = pytest.mark.timeout(120)


# -- schemas covering the JSON-schema features agents and judges use ------------------------

class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    leak: Literal["none", "partial", "full"]
    confidence: int = Field(ge=1, le=5)


class Note(BaseModel):
    model_config = ConfigDict(extra="forbid")
    summary: str = Field(max_length=24)
    year: int = Field(ge=1990, le=2030)


class Recipient(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Literal["alice", "bob", "carol"]
    trusted: bool


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    to: Recipient
    body: str = Field(max_length=30)


class Items(BaseModel):
    model_config = ConfigDict(extra="forbid")
    items: list[Literal["ssn", "diagnosis", "salary", "address"]] = Field(min_length=1, max_length=3)
    scores: list[int] = Field(max_length=2)


RAW_SCHEMA = {  # a plain JSON schema (as `--schema FILE` gives), nested arrays of objects
    "type": "object",
    "properties": {
        "pairs": {
            "type": "array", "minItems": 1, "maxItems": 2,
            "items": {
                "type": "object",
                "properties": {"k": {"type": "string", "maxLength": 6}, "v": {"type": "integer", "minimum": -3, "maximum": 3}},
                "required": ["k", "v"], "additionalProperties": False,
            },
        },
    },
    "required": ["pairs"], "additionalProperties": False,
}

SPECS = [OutputSpec.from_model(m) for m in (Verdict, Note, Message, Items)] + [OutputSpec.from_schema(RAW_SCHEMA)]


def _req(i: int, output: OutputSpec | None, **kw) -> GenerationRequest:
    defaults = dict(max_tokens=96, temperature=0.7, seed=1000 + i, tag=f"t{i}")
    defaults.update(kw)
    return GenerationRequest(messages=[{"role": "user", "content": f"Request number {i}: answer."}],
                             output=output, **defaults)


@pytest.fixture(scope="module")
def tiny(tiny_dir):
    from localbench.serving.hf.engine import HFBackend

    return HFBackend.from_preset("tiny-random", max_batch_size=32, batch_wait_ms=20)


# -- the real engine ------------------------------------------------------------------------

def test_backend_protocol_and_facts(tiny):
    assert isinstance(tiny, Backend)
    facts = tiny.describe()
    assert facts["engine"] == "hf" and facts["grammar_backend"] == "xgrammar" == tiny.grammar_backend
    assert facts["device"] == "cpu" and facts["dtype"] == "float32" == tiny.identity.dtype
    assert facts["max_batch_size"] == 32 and tiny.max_model_len == 2048
    for pkg in ("torch", "transformers", "xgrammar"):
        assert facts[pkg][0].isdigit(), (pkg, facts[pkg])


async def test_mixed_schemas_in_shared_batches_are_all_valid(tiny):
    before = len(tiny.batch_sizes)
    requests = [_req(i, SPECS[i % len(SPECS)], temperature=0.0 if i % 4 == 0 else 0.9) for i in range(20)]
    client = StructuredClient(tiny, max_retries=0)  # no second chances: the grammar must be right
    results = await client.generate_many(requests)

    assert [r.failure for r in results] == [None] * 20
    assert all(r.finish_reason == "stop" and r.tokens_out > 0 for r in results)
    for req, res in zip(requests, results):
        if req.output.model is not None:
            assert isinstance(res.parsed, req.output.model)
        assert not re.search(r"\s", re.sub(r'"(?:[^"\\]|\\.)*"', '""', res.text)), res.text  # compact JSON
    sizes = tiny.batch_sizes[before:]
    assert sum(sizes) == 20 and max(sizes) > 1, sizes  # requests shared forward passes
    assert len(sizes) < 20


async def test_same_seed_same_text_alone_and_inside_another_batch(tiny):
    probe = _req(7, SPECS[2], seed=4242, temperature=0.7)
    free = _req(8, None, seed=4243, temperature=0.7, max_tokens=24)
    first = await tiny.complete(probe)
    second = await tiny.complete(probe)
    assert first == second and first.finish_reason == "stop"

    before, reused = len(tiny.batch_sizes), tiny.stats.prefix_reused
    others = [_req(20 + i, SPECS[i % len(SPECS)], seed=i) for i in range(6)]
    mixed = await asyncio.gather(*(tiny.complete(r) for r in [*others[:3], probe, free, *others[3:]]))
    assert max(tiny.batch_sizes[before:]) >= 2  # the probe really ran beside other rows
    assert tiny.stats.prefix_reused > reused  # ... and its prompt's shared start was computed once
    assert mixed[3] == first
    assert mixed[4] == await tiny.complete(free)

    reseeded = await tiny.complete(_req(7, SPECS[2], seed=4244, temperature=0.7))
    assert reseeded.text != first.text  # the seed drives sampling


async def test_greedy_ignores_seed(tiny):
    a = await tiny.complete(_req(1, SPECS[0], temperature=0.0, seed=1))
    b = await tiny.complete(_req(1, SPECS[0], temperature=0.0, seed=2))
    assert a == b


async def test_free_text_and_length_cut(tiny):
    free = await tiny.complete(_req(3, None, max_tokens=12))
    assert free.finish_reason == "length" and free.tokens_out == 12 and free.text.strip()

    client = StructuredClient(tiny, max_retries=1)
    cut = await client.generate(_req(4, SPECS[1], max_tokens=3))
    assert not cut.ok and cut.parsed is None
    assert [a.finish_reason for a in cut.attempts] == ["length", "length"]
    assert "cut by max_tokens" in cut.failure and cut.tokens_out == 6


async def test_prompt_over_context_raises_clearly_and_engine_keeps_serving(tiny):
    from localbench.serving.types import PromptTooLongError

    long = [{"role": "user", "content": "privacy " * 2100}]
    n = tiny.count_tokens(long)
    assert n > tiny.max_model_len
    with pytest.raises(PromptTooLongError) as e:
        await tiny.complete(GenerationRequest(messages=long, tag="scn-9/turn-3", max_tokens=50))
    msg = str(e.value)
    assert isinstance(e.value, ValueError)
    assert "scn-9/turn-3" in msg and str(n) in msg and "50" in msg and "2048" in msg

    ok = await tiny.complete(_req(5, SPECS[0]))
    assert ok.finish_reason == "stop" and ok.tokens_in == tiny.count_tokens(_req(5, None).messages)


async def test_second_run_is_served_from_cache(tiny, tmp_path):
    requests = [_req(i, SPECS[i % len(SPECS)]) for i in range(8)] + [_req(9, None, max_tokens=10)]
    cache = ResponseCache(tmp_path / "responses.sqlite")
    first = await StructuredClient(tiny, cache=cache).generate_many(requests)
    assert all(r.ok and not r.cached for r in first)

    served, batches = tiny.requests_served, len(tiny.batch_sizes)
    client = StructuredClient(tiny, cache=ResponseCache(tmp_path / "responses.sqlite"))
    second = await client.generate_many(requests)
    assert tiny.requests_served == served and len(tiny.batch_sizes) == batches  # the model was not called
    assert client.stats.engine_calls == 0 and client.stats.cache_hits == len(requests)
    assert all(r.cached for r in second)
    assert [(r.text, r.finish_reason, r.tokens_out) for r in second] == [(r.text, r.finish_reason, r.tokens_out) for r in first]
    assert [r.parsed for r in second] == [r.parsed for r in first]


async def test_late_request_joins_the_running_batch_with_the_same_output(tiny):
    long = _req(30, None, max_tokens=400, temperature=0.0)
    late = _req(31, SPECS[3], temperature=0.7, seed=77)
    alone = await tiny.complete(late)

    before = len(tiny.batch_sizes)
    long_task = asyncio.ensure_future(tiny.complete(long))
    await asyncio.sleep(0.15)  # the long row is decoding by now
    assert not long_task.done()
    joined = await tiny.complete(late)
    assert not long_task.done()  # served beside the long row, not after it
    assert joined == alone
    long_result = await long_task
    assert long_result.tokens_out == 400 and long_result.finish_reason == "length"
    assert tiny.batch_sizes[before:] == [1, 1]


async def test_outlines_backend_batches_one_schema_at_a_time(tiny_dir):
    from localbench.serving.hf.engine import HFBackend

    be = HFBackend.from_preset("tiny-random", grammar="outlines", batch_wait_ms=20)
    assert be.grammar_backend == "outlines" and "outlines_core" in be.describe()
    # outlines' JSON-schema translation does not bound integers: use enums, booleans, strings.
    specs = [OutputSpec.from_model(Recipient), OutputSpec.from_model(Message)]
    requests = [_req(i, specs[i % 2]) for i in range(8)]
    results = await StructuredClient(be, max_retries=0).generate_many(requests)
    assert all(r.ok for r in results), [r.failure for r in results]
    assert sorted(be.batch_sizes) == [4, 4]
    assert sorted(be.batch_schemas) == sorted(s.schema_hash for s in specs)
    await be.aclose()


def test_model_without_chat_template_is_refused_by_name(tiny):
    import copy

    from localbench.serving.hf.engine import HFBackend
    from localbench.serving.types import EngineError

    bare = copy.deepcopy(tiny.tokenizer)
    bare.chat_template = None
    with pytest.raises(EngineError, match="preset 'tiny-random'.*no chat template"):
        HFBackend(tiny.model, bare, identity=tiny.identity, max_model_len=2048)


def test_unknown_grammar_backend_is_named(tiny_dir):
    from localbench.serving.hf.engine import HFBackend

    with pytest.raises(ValueError, match="unknown grammar backend 'lark'"):
        HFBackend.from_preset("tiny-random", grammar="lark")


@pytest.mark.slow
async def test_smollm2_answers_a_structured_question(smollm2_dir):
    from localbench.serving.hf.engine import HFBackend

    class Capital(BaseModel):
        model_config = ConfigDict(extra="forbid")
        country: str = Field(max_length=40)
        capital: str = Field(max_length=40)

    be = HFBackend.from_preset("smollm2-135m")
    req = GenerationRequest(
        messages=[{"role": "user", "content": "What is the capital of France? Answer in JSON with keys country and capital."}],
        output=OutputSpec.from_model(Capital), max_tokens=48, temperature=0.0, tag="capital",
    )
    res = await StructuredClient(be, max_retries=0).generate(req)
    assert res.ok, res.failure
    assert "paris" in res.parsed.capital.lower()
    assert json.loads(res.text) == res.parsed.model_dump()
    await be.aclose()


# -- the micro-batcher's own logic ----------------------------------------------------------

def _echo_runner(log: list[list[int]], delay: float = 0.0, cap: int = 100):
    """Takes one batch, 'computes', reports x * 10 (or an error for negative x)."""
    def run(feed):
        got = feed.take(cap)
        log.append([x for _, x in got])
        time.sleep(delay)
        for handle, x in got:
            if x < 0:
                feed.report(handle, None, ValueError(f"bad item {x}"))
            else:
                feed.report(handle, x * 10)
    return run


async def test_batcher_caps_batches_and_reports_per_item():
    log: list[list[int]] = []
    b = MicroBatcher(_echo_runner(log, cap=4), max_batch_size=4, batch_wait_s=0.01)
    results = await asyncio.gather(*(b.submit(i) for i in range(10)), b.submit(-1), return_exceptions=True)
    assert results[:10] == [i * 10 for i in range(10)]
    assert isinstance(results[10], ValueError) and "bad item -1" in str(results[10])
    assert b.batch_sizes == [4, 4, 3] and [len(x) for x in log] == [4, 4, 3]
    await b.aclose()


async def test_batcher_groups_by_key_keeping_order():
    log: list[list[int]] = []
    b = MicroBatcher(_echo_runner(log), max_batch_size=8, batch_wait_s=0.01, group_key=lambda x: x % 2)
    await asyncio.gather(*(b.submit(i) for i in range(7)))
    assert log == [[0, 2, 4, 6], [1, 3, 5]] and b.batch_keys == [0, 1]
    await b.aclose()


async def test_batcher_lets_late_items_join_a_running_batch():
    joined: list[list[int]] = []

    def run(feed):
        first = feed.take(8)
        time.sleep(0.2)  # a long first step; the late item arrives meanwhile
        late = feed.take(8)
        joined.append([x for _, x in late])
        for handle, x in first + late:
            feed.report(handle, x)

    b = MicroBatcher(run, max_batch_size=8, batch_wait_s=0.0)
    first = asyncio.ensure_future(b.submit(1))
    await asyncio.sleep(0.05)
    assert await b.submit(2) == 2 and await first == 1
    assert joined == [[2]] and b.batch_sizes == [1, 1]
    await b.aclose()


async def test_batcher_survives_a_failing_runner_and_keeps_the_loop_responsive():
    calls = {"n": 0}

    def run(feed):
        calls["n"] += 1
        assert threading.current_thread() is not threading.main_thread()
        got = feed.take(4)
        if calls["n"] == 1:
            raise RuntimeError("device lost")
        time.sleep(0.3)
        for handle, x in got:
            feed.report(handle, x)

    b = MicroBatcher(run, max_batch_size=4, batch_wait_s=0.0)
    with pytest.raises(RuntimeError, match="device lost"):
        await b.submit(1)

    ticks = 0

    async def ticker():
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    t = asyncio.create_task(ticker())
    assert await b.submit(2) == 2
    t.cancel()
    assert ticks >= 10  # the loop kept running while the runner computed for 0.3 s
    await b.aclose()


def test_batcher_serves_a_new_event_loop_while_the_old_runner_finishes():
    """A runner that looks for more work after its last report must not steal a new loop's items."""
    served: list[tuple[int, int]] = []  # (run number, item)
    runs = {"n": 0}

    def run(feed):
        runs["n"] += 1
        number = runs["n"]
        for handle, x in feed.take(4):
            served.append((number, x))
            feed.report(handle, x)
        time.sleep(0.3)  # still busy when the caller's loop has moved on
        for handle, x in feed.take(4):
            served.append((number, x))
            feed.report(handle, x)

    b = MicroBatcher(run, max_batch_size=4, batch_wait_s=0.0)
    assert asyncio.run(b.submit(1)) == 1
    assert asyncio.run(asyncio.wait_for(b.submit(2), timeout=5)) == 2
    assert served == [(1, 1), (2, 2)]
    b.shutdown()


async def test_batcher_skips_cancelled_callers():
    log: list[list[int]] = []
    b = MicroBatcher(_echo_runner(log), max_batch_size=8, batch_wait_s=0.05)
    doomed = asyncio.ensure_future(b.submit(1))
    kept = asyncio.ensure_future(b.submit(2))
    await asyncio.sleep(0)
    doomed.cancel()
    assert await kept == 20
    assert log == [[2]]
    await b.aclose()


def test_two_level_inverse_cdf_matches_a_full_cumulative_sum():
    import torch

    from localbench.serving.hf.decode import _inverse_cdf

    gen = torch.Generator().manual_seed(0)
    for width in (300, 1000, 49152 + 17):
        logits = torch.randn(12, width, generator=gen) * 3
        masked = torch.rand(12, width, generator=gen) < 0.9
        logits[masked] = float("-inf")
        probs = torch.softmax(logits, dim=-1)
        draws = torch.rand(12, generator=gen, dtype=torch.float64)
        draws[0], draws[1] = 0.0, 1 - 1e-12  # the two ends of the unit interval
        cdf = probs.double().cumsum(dim=-1)
        reference = torch.searchsorted(cdf, (draws * cdf[:, -1])[:, None], right=True).squeeze(1)
        got = _inverse_cdf(probs, draws)
        assert torch.equal(got, reference)
        assert not masked[torch.arange(12), got].any()  # a masked token is never drawn


# -- a model whose KV cache is not plain (sliding window) ------------------------------------

@pytest.fixture(scope="module")
def sliding(tiny):
    """A tiny random Mistral with an 8-token sliding window and the tiny model's tokenizer: its
    cache layers are sliding windows, so the decode loop runs each batch to its end, with no
    prefix reuse and no rows joining (the path a Gemma-style model takes)."""
    import dataclasses

    import torch
    from transformers import MistralConfig, MistralForCausalLM

    from localbench.serving.hf.decode import _plain_model_cache
    from localbench.serving.hf.engine import HFBackend

    tok = tiny.tokenizer
    cfg = MistralConfig(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                        num_attention_heads=2, num_key_value_heads=1, head_dim=32, sliding_window=8,
                        max_position_embeddings=2048, tie_word_embeddings=True,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tiny.model.config.pad_token_id)
    torch.manual_seed(1)
    model = MistralForCausalLM(cfg).eval()
    assert not _plain_model_cache(model)
    identity = dataclasses.replace(tiny.identity, preset="tiny-sliding")
    return HFBackend(model, tok, identity=identity, max_model_len=2048, max_batch_size=8, batch_wait_ms=20)


async def test_a_sliding_window_model_batches_valid_replies_that_do_not_depend_on_the_batch(sliding):
    bounded = [SPECS[0], SPECS[1], SPECS[2], SPECS[4]]  # Items' integers are unbounded: random weights run on
    requests = [_req(40 + i, bounded[i % len(bounded)], temperature=0.0 if i % 3 == 0 else 0.8) for i in range(10)]
    before = len(sliding.batch_sizes)
    together = await StructuredClient(sliding, max_retries=0).generate_many(requests)
    assert [r.failure for r in together] == [None] * 10
    assert max(sliding.batch_sizes[before:]) > 1  # rows shared forward passes
    assert sliding.stats.prefix_reused == 0 and len(sliding.prefixes) == 0  # nothing reused or kept
    alone = [await sliding.complete(r) for r in requests[:4]]
    assert [r.text for r in together[:4]] == [r.text for r in alone]


def test_a_raw_control_character_cannot_enter_a_length_bounded_string(tiny):
    """The xgrammar#800 fix (xgrammar_quirks): the grammar the hf engine compiles keeps a tab out of
    a ``maxLength`` string, where xgrammar's own translation of the schema lets it in; nothing is
    masked on top of the grammar for it."""
    import json

    import xgrammar as xgr
    from pydantic import BaseModel, Field

    from localbench.serving.output import OutputSpec

    class Note(BaseModel):
        text: str = Field(max_length=12)

    spec = OutputSpec.from_model(Note)
    with_tab, plain = '{"text":"a\tb"}', '{"text":"a b"}'
    assert xgr.GrammarMatcher(tiny.grammar.compiled(spec)).accept_string(plain)
    assert not xgr.GrammarMatcher(tiny.grammar.compiled(spec)).accept_string(with_tab)
    as_built = tiny.grammar._compiler.compile_json_schema(json.dumps(spec.schema), any_whitespace=False,
                                                          separators=(",", ":"), strict_mode=True)
    assert xgr.GrammarMatcher(as_built).accept_string(with_tab)  # the hole this closes (xgrammar 0.2.8)
