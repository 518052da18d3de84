"""Context-budget policy: build every prompt so that it fits the model's window with room to reply.

Policy (documented in docs/simulation.md):

1. The prompt is built with the full visible history whenever it fits in
   ``max_model_len - max_tokens - margin`` tokens, counted with the engine's own tokenizer and
   chat template (``Backend.count_tokens``) before the request is sent.
2. Otherwise the oldest visible messages are dropped first, as few as needed (found by bisection;
   the prompt shrinks as more is dropped), and the prompt says that earlier history was cut. The
   system prompt (who the speaker is, the scenario, the privacy instructions) and the closing
   instruction are never cut.
3. If even the prompt with no history at all does not fit, ``ContextExhausted`` is raised: the
   caller ends the simulation with termination ``context_exhausted`` instead of crashing.
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Awaitable, Generator
from typing import Any, Callable

from localbench.serving.messages import Message  # content: a string or a list of text/image parts

DEFAULT_MARGIN = 8
"""Tokens kept free besides the reply: chat templates may add a generation prompt or a stop token
that ``count_tokens`` does not see on every engine."""


class ContextExhausted(RuntimeError):
    """Even the prompt without any history exceeds the budget."""

    def __init__(self, tokens: int, budget: int):
        super().__init__(f"prompt needs {tokens} tokens with no history; budget is {budget}")
        self.tokens = tokens
        self.budget = budget


@dataclass(frozen=True)
class Budget:
    """How many prompt tokens a request may use."""

    max_model_len: int
    max_tokens: int
    margin: int = DEFAULT_MARGIN

    @property
    def prompt_tokens(self) -> int:
        return self.max_model_len - self.max_tokens - self.margin


@dataclass
class Fitted:
    """A prompt that fits, and what it cost to make it fit."""

    messages: list[Message]
    dropped: int  # oldest history items left out
    kept: int  # history items in the prompt
    tokens: int  # prompt tokens, as counted
    budget: int

    def record(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "budget": self.budget, "dropped": self.dropped, "kept": self.kept}


def fit_prompt(
    build: Callable[[int], list[Message]],
    n_history: int,
    budget: Budget,
    count_tokens: Callable[[list[Message]], int],
) -> Fitted:
    """The prompt ``build(dropped)`` with the fewest oldest history items dropped that fits.

    ``build(k)`` must return the prompt without the ``k`` oldest history items (and with a cut
    marker when ``k > 0``); it is assumed to shrink as ``k`` grows.
    """
    search = _search(build, n_history, budget)
    msgs = next(search)
    try:
        while True:
            msgs = search.send(count_tokens(msgs))
    except StopIteration as done:
        return done.value


async def afit_prompt(
    build: Callable[[int], list[Message]],
    n_history: int,
    budget: Budget,
    count_tokens: Callable[[list[Message]], Awaitable[int]],
) -> Fitted:
    """``fit_prompt`` with an async counter (``Backend.acount_tokens``): a count that waits on a
    server leaves the event loop to the other simulations."""
    search = _search(build, n_history, budget)
    msgs = next(search)
    try:
        while True:
            msgs = search.send(await count_tokens(msgs))
    except StopIteration as done:
        return done.value


def _search(build: Callable[[int], list[Message]], n_history: int,
            budget: Budget) -> Generator[list[Message], int, Fitted]:
    """The search behind both: yields each prompt to count and is sent its count back."""
    limit = budget.prompt_tokens

    def size(k: int):
        msgs = build(k)
        n = yield msgs
        return msgs, n

    msgs, n = yield from size(0)
    if n <= limit:
        return Fitted(msgs, 0, n_history, n, limit)
    smallest, n_small = (yield from size(n_history)) if n_history else (msgs, n)
    if n_small > limit:
        raise ContextExhausted(n_small, limit)
    lo, hi = 0, n_history  # size(lo) too big, size(hi) fits
    best = (smallest, n_small)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        m, t = yield from size(mid)
        if t <= limit:
            hi, best = mid, (m, t)
        else:
            lo = mid
    return Fitted(best[0], hi, n_history - hi, best[1], limit)
