"""StructuredClient and ResponseCache: validation, bounded retries, recorded failures, replay."""

from __future__ import annotations

import multiprocessing as mp
from typing import Literal

import pytest
from pydantic import BaseModel, Field

from fakes import ScriptedBackend
from localbench.serving.cache import ResponseCache, cache_key
from localbench.serving.client import StructuredClient, attempt_seed
from localbench.serving.output import OutputSpec
from localbench.serving.seeds import derive_seed
from localbench.serving.types import GenerationRequest, ModelIdentity, RawCompletion


class Label(BaseModel):
    level: Literal["none", "partial", "full"]
    evidence: str = Field(max_length=40)


def _req(seed=7, **kw):
    return GenerationRequest(messages=[{"role": "user", "content": "judge this"}],
                             output=OutputSpec.from_model(Label), seed=seed, **kw)


async def test_invalid_reply_is_retried_with_new_seed_then_succeeds():
    replies = iter([('{"level":"Partial","evidence":"x"}', "stop"), ('{"level":"partial","evidence":"x"}', "stop")])
    be = ScriptedBackend(lambda r: next(replies))
    res = await StructuredClient(be, max_retries=2).generate(_req(temperature=0.7))
    assert res.ok and res.parsed.level == "partial"
    assert [c.seed for c in be.calls] == [7, attempt_seed(7, 1)]
    assert be.calls[0].seed != be.calls[1].seed
    assert len(res.attempts) == 2 and res.attempts[0].error


async def test_failure_after_retries_is_recorded_not_dropped():
    be = ScriptedBackend(lambda r: ('{"level":"full","evidence":"' + "x" * 300, "length"))
    client = StructuredClient(be, max_retries=2)
    res = await client.generate(_req(max_tokens=100))
    assert not res.ok and res.parsed is None
    assert "3 attempts failed" in res.failure and "cut by max_tokens" in res.failure
    assert len(be.calls) == 3 and client.stats.failures == 1
    # greedy: a retry with another seed would repeat the cut reply, so each retry gets twice the room
    assert [c.max_tokens for c in be.calls] == [100, 200, 400]


async def test_a_greedy_retry_stops_where_it_could_only_repeat():
    """Greedy and not cut: the same prompt would give the same invalid reply; no room left: no retry."""
    be = ScriptedBackend(lambda r: ('{"level":"Partial","evidence":"x"}', "stop"))
    res = await StructuredClient(be, max_retries=2).generate(_req())
    assert not res.ok and len(be.calls) == 1 and "1 attempts failed" in res.failure
    cut = ScriptedBackend(lambda r: ('{"level":"full","evidence":"' + "x" * 300, "length"))
    cut.max_model_len = 10 + 150  # the prompt (10 tokens) leaves room for 150
    res = await StructuredClient(cut, max_retries=2).generate(_req(max_tokens=100))
    assert [c.max_tokens for c in cut.calls] == [100, 150] and not res.ok


def test_derived_seeds_are_deterministic_and_distinct():
    assert derive_seed(0, "s1", "L0", 3) == derive_seed(0, "s1", "L0", 3)
    assert derive_seed(0, "s1", "L0", 3) != derive_seed(0, "s1", "L0", 4)
    assert derive_seed(0, 1) != derive_seed(0, "1")
    assert 0 <= derive_seed(123, "x") < 2**31


async def test_second_run_served_entirely_from_cache(tmp_path):
    be = ScriptedBackend(lambda r: ('{"level":"none","evidence":"s%d"}' % (r.seed % 100), "stop"))
    cache = ResponseCache(tmp_path / "c.sqlite")
    reqs = [_req(seed=s) for s in range(12)]
    first = await StructuredClient(be, cache=cache).generate_many(reqs)
    n_calls = len(be.calls)
    second = await StructuredClient(be, cache=cache).generate_many(reqs)
    assert len(be.calls) == n_calls == 12
    assert [r.text for r in first] == [r.text for r in second]
    assert all(r.cached for r in second) and not any(r.cached for r in first)


async def test_cache_key_covers_model_schema_sampling_and_seed():
    ident = ModelIdentity("a", "src", "rev")
    base = cache_key("hf", ident, _req(), 7)
    assert base != cache_key("hf", ModelIdentity("a", "src", "rev2"), _req(), 7)
    assert base != cache_key("hf", ident, _req(), 8)
    assert base != cache_key("hf", ident, _req(temperature=0.5), 7)
    assert base != cache_key("vllm", ident, _req(), 7)
    free = GenerationRequest(messages=_req().messages, seed=7)
    assert base != cache_key("hf", ident, free, 7)
    # the preset's output-changing settings (chat_template_kwargs, engine_args) and the hf grammar backend
    assert base != cache_key("hf", ModelIdentity("a", "src", "rev", settings="0f1e2d3c4b5a6978"), _req(), 7)
    assert base != cache_key("hf", ModelIdentity("a", "src", "rev", grammar="outlines"), _req(), 7)
    assert (cache_key("hf", ModelIdentity("a", "src", "rev", grammar="xgrammar"), _req(), 7)
            != cache_key("hf", ModelIdentity("a", "src", "rev", grammar="outlines"), _req(), 7))


def _writer(path, start):
    c = ResponseCache(path)
    for i in range(start, start + 200):
        c.put(f"k{i}", "m", RawCompletion(text=str(i), finish_reason="stop", tokens_in=1, tokens_out=1))


def test_cache_safe_under_concurrent_writer_processes(tmp_path):
    path = tmp_path / "c.sqlite"
    ResponseCache(path)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(path, k * 150)) for k in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    c = ResponseCache(path)
    assert len(c) == 500  # 3 x 200 with overlaps of 50: 0..499
    assert c.get("k499").text == "499"


def test_engine_errors_are_never_cached(tmp_path):
    c = ResponseCache(tmp_path / "c.sqlite")
    c.put("k", "m", RawCompletion(text="", finish_reason="error", tokens_in=0, tokens_out=0))
    assert c.get("k") is None


def test_schema_file_errors_name_the_file(tmp_path):
    from localbench.serving.output import SchemaFileError

    bad = tmp_path / "bad.json"
    bad.write_text('{"type": "object", "properties": {')
    with pytest.raises(SchemaFileError, match="bad.json: not valid JSON"):
        OutputSpec.from_file(bad)
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"type": "objekt"}')
    with pytest.raises(SchemaFileError, match="wrong.json: invalid JSON schema"):
        OutputSpec.from_file(wrong)
    good = tmp_path / "good.json"
    good.write_text('{"type":"object","properties":{"n":{"type":"integer","maximum":5}},"required":["n"]}')
    spec = OutputSpec.from_file(good)
    assert spec.validate('{"n": 3}') == {"n": 3}
    with pytest.raises(Exception, match="n"):
        spec.validate('{"n": 9}')
