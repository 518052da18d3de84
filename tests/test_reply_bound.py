"""A greedy judge reply gets the room its schema allows from the first attempt (reply_bound), so a
long answer is decoded once instead of being cut, then decoded again from its start."""

from __future__ import annotations

import json
from dataclasses import replace

from fakes import ScriptedBackend
from localbench.benchmarks.asb.judges import privacy_items_call
from localbench.serving.client import StructuredClient
from localbench.serving.output import OutputSpec
from localbench.serving.reply_bound import max_reply_chars
from localbench.serving.types import GenerationRequest


def _longest_privacy_label(schema: dict) -> str:
    """The longest reply the privacy judge's schema admits, written out by hand."""
    out = {}
    for key, item in schema["properties"].items():
        out[key] = {name: ("x" * part["maxLength"] if part.get("type") == "string" else max(part["enum"], key=len))
                    for name, part in item["properties"].items()}
    return json.dumps(out, separators=(",", ":"))


def test_the_bound_is_the_longest_reply_of_a_real_judge_schema():
    call = privacy_items_call("Ana", [(f"item_{i}", f"private fact {i}") for i in range(1, 7)], "[m1] a -> b: hi")
    assert max_reply_chars(call.schema) == len(_longest_privacy_label(call.schema))


def test_unbounded_parts_make_the_reply_unbounded():
    assert max_reply_chars({"type": "string"}) is None
    assert max_reply_chars({"type": "array", "items": {"type": "boolean"}}) is None
    assert max_reply_chars({"type": "object", "properties": {"a": {"type": "boolean"}}}) is None  # other keys allowed
    assert max_reply_chars({"type": "array", "items": {"type": "boolean"}, "maxItems": 3}) == len("[false,false,false]")
    assert max_reply_chars({"anyOf": [{"const": "ab"}, {"type": "null"}]}) == 4


def _long_request(max_tokens: int) -> GenerationRequest:
    schema = {"type": "object", "additionalProperties": False, "required": ["quote"],
              "properties": {"quote": {"type": "string", "maxLength": 300}}}
    return GenerationRequest(messages=[{"role": "user", "content": "quote it"}], output=OutputSpec.from_schema(schema),
                             max_tokens=max_tokens, temperature=0.0)


async def test_a_greedy_reply_longer_than_max_tokens_is_decoded_once():
    reply = json.dumps({"quote": "y" * 250}, separators=(",", ":"))  # 262 characters: more than 100 tokens

    def engine(r: GenerationRequest):
        return (reply, "stop") if r.max_tokens >= len(reply) else (reply[: r.max_tokens], "length")

    be = ScriptedBackend(engine)
    res = await StructuredClient(be, max_retries=2).generate(_long_request(100))
    assert res.ok and len(be.calls) == 1, [c.max_tokens for c in be.calls]
    assert be.calls[0].max_tokens == max_reply_chars(_long_request(100).output.schema) == 312
    sampled = ScriptedBackend(engine)  # a sampled request keeps its budget: its retry is a new sample anyway
    await StructuredClient(sampled, max_retries=0).generate(replace(_long_request(100), temperature=0.7))
    assert [c.max_tokens for c in sampled.calls] == [100]


async def test_the_room_stops_at_the_context_window():
    be = ScriptedBackend(lambda r: ('{"quote":"y"}', "stop"))
    be.max_model_len = 200  # the prompt counts 6 tokens here: 194 left, less than the schema's 312
    await StructuredClient(be).generate(_long_request(100))
    assert be.calls[0].max_tokens == 200 - be.count_tokens(_long_request(100).messages)
