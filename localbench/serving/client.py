"""StructuredClient: the one place where replies are cached, validated, retried and recorded.

Every engine gives raw completions; this wraps an engine so that a structured request either
returns a validated object or a recorded failure after a bounded number of retries, each retry
with a new seed derived from the request's seed. Nothing is dropped and nothing is guessed.

A greedy request (temperature 0, as judges ask) would give the same reply under any seed, so
its retry changes what can change: a reply cut by ``max_tokens`` is asked again with twice the
tokens (as far as the context window allows); any other invalid greedy reply is final at once.
Since such a retry decodes the same start again, a greedy request whose schema bounds its reply
gets that bound (``reply_bound``) from its first attempt, as far as the context window allows.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field, replace
from typing import Iterable

from localbench.serving import reply_bound
from localbench.serving.cache import ResponseCache, cache_key
from localbench.serving.output import OutputValidationError
from localbench.serving.prompt_counts import aprompt_tokens
from localbench.serving.seeds import derive_seed
from localbench.serving.types import Attempt, Backend, GenerationRequest, GenerationResult, RawCompletion


@dataclass
class ClientStats:
    """Counters for progress displays and run records."""

    requests: int = 0
    in_flight: int = 0
    cache_hits: int = 0
    engine_calls: int = 0
    failures: int = 0
    retries: int = 0
    tokens_out: int = 0
    started: float = field(default_factory=time.monotonic)

    def tokens_per_s(self) -> float:
        dt = time.monotonic() - self.started
        return self.tokens_out / dt if dt > 0 else 0.0


def attempt_seed(seed: int, attempt: int) -> int:
    """Attempt 0 uses the request's own seed; each retry derives a fresh one from it."""
    return seed if attempt == 0 else derive_seed(seed, "retry", attempt)


class StructuredClient:
    """Wraps a Backend with the response cache, validation and bounded retries."""

    def __init__(self, backend: Backend, cache: ResponseCache | None = None, max_retries: int = 2):
        self.backend = backend
        self.cache = cache
        self.max_retries = max_retries
        self.stats = ClientStats()

    @property
    def model_name(self) -> str:
        return self.backend.identity.preset

    async def _complete(self, request: GenerationRequest, seed: int) -> tuple[RawCompletion, bool]:
        key = None
        if self.cache is not None:
            key = cache_key(self.backend.engine, self.backend.identity, request, seed)
            hit = self.cache.get(key)
            if hit is not None:
                self.stats.cache_hits += 1
                return hit, True
        self.stats.engine_calls += 1
        req = request if seed == request.seed else _with_seed(request, seed)
        raw = await self.backend.complete(req)
        if self.cache is not None and key is not None:
            self.cache.put(key, self.backend.identity.key(), raw)
        return raw, False

    async def generate(self, request: GenerationRequest) -> GenerationResult:
        """Run one request to a validated result or a recorded failure."""
        t0 = time.monotonic()
        self.stats.requests += 1
        self.stats.in_flight += 1
        attempts: list[Attempt] = []
        tokens_in = tokens_out = 0
        try:
            request = await self._room_for_schema(request)
            for i in range(self.max_retries + 1):
                if i and request.temperature <= 0:
                    request = self._greedy_retry(request, raw)
                    if request is None:
                        break  # nothing a retry could change
                seed = attempt_seed(request.seed, i)
                raw, cached = await self._complete(request, seed)
                tokens_in += raw.tokens_in
                tokens_out += raw.tokens_out
                self.stats.tokens_out += 0 if cached else raw.tokens_out
                error = None
                parsed = None
                if request.output is not None:
                    try:
                        parsed = request.output.validate(raw.text)
                    except OutputValidationError as e:
                        cut = " (cut by max_tokens)" if raw.finish_reason == "length" else ""
                        error = f"invalid output{cut}: {e}"
                attempts.append(Attempt(seed=seed, finish_reason=raw.finish_reason, error=error, cached=cached))
                if error is None:
                    return GenerationResult(
                        text=raw.text, parsed=parsed, finish_reason=raw.finish_reason,
                        tokens_in=tokens_in, tokens_out=tokens_out, latency_s=time.monotonic() - t0,
                        cached=all(a.cached for a in attempts), seed=seed, attempts=attempts,
                        engine=self.backend.engine, model=self.model_name,
                    )
                if i < self.max_retries:
                    self.stats.retries += 1
            self.stats.failures += 1
            return GenerationResult(
                text=raw.text, parsed=None, finish_reason=raw.finish_reason,
                tokens_in=tokens_in, tokens_out=tokens_out, latency_s=time.monotonic() - t0,
                cached=all(a.cached for a in attempts), seed=attempts[-1].seed, attempts=attempts,
                failure=f"{len(attempts)} attempts failed; last: {attempts[-1].error}",
                engine=self.backend.engine, model=self.model_name,
            )
        finally:
            self.stats.in_flight -= 1

    async def _room_for_schema(self, request: GenerationRequest) -> GenerationRequest:
        """A greedy structured request with more room than ``max_tokens`` when its schema allows a longer
        reply: the longest reply the schema admits, capped by what the context window leaves."""
        if request.temperature > 0 or request.output is None:
            return request
        if any(not isinstance(m.get("content"), str) for m in request.messages):
            return request  # an image part: engines count images their own way; the budget as asked
        bound = reply_bound.max_reply_chars(request.output.schema)
        if bound is None or bound <= request.max_tokens:
            return request
        try:
            room = self.backend.max_model_len - await aprompt_tokens(self.backend, request.messages)
        except Exception:  # noqa: BLE001 - no count (a test double without one): the budget as asked
            return request
        more = min(bound, room)
        return replace(request, max_tokens=more) if more > request.max_tokens else request

    def _greedy_retry(self, request: GenerationRequest, last: RawCompletion) -> GenerationRequest | None:
        """The retry of a greedy request: more room if the reply was cut, else None (it would repeat)."""

        if last.finish_reason != "length":
            return None
        room = self.backend.max_model_len - last.tokens_in
        more = min(2 * request.max_tokens, room)
        return replace(request, max_tokens=more) if more > request.max_tokens else None

    async def generate_many(self, requests: Iterable[GenerationRequest]) -> list[GenerationResult]:
        """All requests concurrently, results in input order (the engine batches them)."""
        return list(await asyncio.gather(*(self.generate(r) for r in requests)))

    async def aclose(self) -> None:
        await self.backend.aclose()


def _with_seed(request: GenerationRequest, seed: int) -> GenerationRequest:
    return replace(request, seed=seed)
