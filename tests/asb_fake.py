"""A small deterministic fake Backend for unit tests of the simulation logic around an engine.

It answers every structured request with a random instance of the request's JSON schema, drawn
from the request's seed (so the same request gives the same answer), and can be told to answer
some requests with invalid text, to exercise failure recording. Real-engine tests use the hf engine.
"""

from __future__ import annotations

import json
import random
from typing import Any

from localbench.serving.types import Backend, GenerationRequest, ModelIdentity, RawCompletion

WORDS = "plan date budget lunch sunday venue split bill noted agreed thanks option maybe later fine".split()


def sample(schema: dict[str, Any], root: dict[str, Any], rng: random.Random) -> Any:
    """A random instance of a (pydantic-generated) JSON schema."""
    if "$ref" in schema:
        name = schema["$ref"].split("/")[-1]
        return sample(root["$defs"][name], root, rng)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return sample(rng.choice(schema[key]), root, rng)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    t = schema.get("type")
    if t == "object":
        return {k: sample(v, root, rng) for k, v in schema.get("properties", {}).items()}
    if t == "array":
        lo = schema.get("minItems", 0)
        hi = schema.get("maxItems", lo + 2)
        return [sample(schema["items"], root, rng) for _ in range(rng.randint(lo, hi))]
    if t == "string":
        lo, hi = schema.get("minLength", 0), min(schema.get("maxLength", 60), 60)
        text = " ".join(rng.choice(WORDS) for _ in range(12))[: rng.randint(max(lo, 1), max(hi, 1))]
        return text if len(text) >= lo else text + "x" * (lo - len(text))
    if t == "integer":
        return rng.randint(schema.get("minimum", 0), schema.get("maximum", 10))
    if t == "number":
        return rng.uniform(schema.get("minimum", 0.0), schema.get("maximum", 1.0))
    if t == "boolean":
        return rng.random() < 0.5
    raise ValueError(f"fake backend cannot sample schema {schema}")


class FakeBackend(Backend):
    """Backend protocol over random schema instances; ``bad_rate`` of replies are not JSON."""

    engine = "fake"
    grammar_backend = "none"

    def __init__(self, max_model_len: int = 8192, bad_rate: float = 0.0, name: str = "fake",
                 chars_per_token: int = 4, delay_s: float = 0.0):
        self.identity = ModelIdentity(preset=name, source="fake", revision="1")
        self.max_model_len = max_model_len
        self.bad_rate = bad_rate
        self.chars_per_token = chars_per_token
        self.delay_s = delay_s
        self.requests: list[GenerationRequest] = []
        self.max_in_flight = 0
        self._in_flight = 0

    def count_tokens(self, messages: list[dict[str, str]]) -> int:
        return sum(len(m["content"]) for m in messages) // self.chars_per_token + 4 * len(messages)

    async def complete(self, request: GenerationRequest) -> RawCompletion:
        import asyncio

        self.requests.append(request)
        self._in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            await asyncio.sleep(self.delay_s)
        finally:
            self._in_flight -= 1
        rng = random.Random(request.seed)
        tokens_in = self.count_tokens(request.messages)
        if rng.random() < self.bad_rate:
            return RawCompletion("not json at all", "stop", tokens_in, 4)
        if request.output is None:
            return RawCompletion("free text", "stop", tokens_in, 2)
        text = json.dumps(sample(request.output.schema, request.output.schema, rng))
        return RawCompletion(text, "stop", tokens_in, len(text) // self.chars_per_token + 1)

    async def aclose(self) -> None:
        return None

    def describe(self) -> dict[str, Any]:
        return {"engine": "fake"}


def fake_clients(backend: FakeBackend | None = None, max_retries: int = 1):
    """RoleClients with one fake backend for every role."""
    from localbench.benchmarks.asb.simulate import ALIASES
    from localbench.runtime.clients import RoleClients
    from localbench.serving.client import StructuredClient

    client = StructuredClient(backend or FakeBackend(), cache=None, max_retries=max_retries)
    return RoleClients({"agent": client, "user_sim": client}, ALIASES)
