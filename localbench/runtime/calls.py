"""A simulation's model calls: each prompt fitted to the model's context window, sent, and counted.

Every benchmark's simulator makes its calls through one ``SimulationCalls`` per simulation, so
the context-budget policy (``runtime.context``), the failure counts and the context cuts a
transcript records are the same for all of them. The simulator builds the prompt (``build(k)``:
the prompt without the ``k`` oldest history items) and derives the request's seed; this fits,
sends and records.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from localbench.runtime.clients import RoleClients
from localbench.runtime.context import Budget, ContextExhausted, Fitted, afit_prompt
from localbench.serving.output import OutputSpec
from localbench.serving.types import GenerationRequest, GenerationResult, Message


class OutOfContext(Exception):
    """Even the prompt with no history does not fit: the simulation ends ``context_exhausted``."""


@dataclass
class FittedCall:
    """One model call and how its prompt was fitted."""

    result: GenerationResult
    fit: Fitted

    @property
    def ok(self) -> bool:
        return self.result.ok


@dataclass
class SimulationCalls:
    """Calls of one simulation and their counts (what its transcript records)."""

    clients: RoleClients
    max_tokens: int
    temperatures: dict[str, float]
    n_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    failed: dict[str, int] = field(default_factory=dict)  # model role -> failed calls
    cuts: list[dict[str, Any]] = field(default_factory=list)  # every prompt that lost history to fit

    async def call(self, *, role: str, build: Callable[[int], list[Message]], n_history: int,
                   output: OutputSpec | None, seed: int, tag: str, where: dict[str, Any]) -> FittedCall:
        """Fit ``build``'s prompt to ``role``'s model, send it, count it.

        ``where`` (round, speaker, ...) is recorded with any context cut. Raises OutOfContext when
        even the prompt without history does not fit.
        """
        client = self.clients.for_role(role)
        budget = Budget(client.backend.max_model_len, self.max_tokens)
        try:
            fit = await afit_prompt(build, n_history, budget, client.backend.acount_tokens)
        except ContextExhausted as e:
            self.cuts.append({**where, "role": role, "exhausted": True, "tokens": e.tokens, "budget": e.budget,
                              "dropped": n_history, "kept": 0})
            raise OutOfContext(str(e)) from e
        if fit.dropped:
            self.cuts.append({**where, "role": role, "exhausted": False, **fit.record()})
        result = await client.generate(GenerationRequest(
            messages=fit.messages, output=output, role=role, max_tokens=self.max_tokens,
            temperature=self.temperatures[role], seed=seed, tag=tag))
        self.n_calls += 1
        self.tokens_in += result.tokens_in
        self.tokens_out += result.tokens_out
        if not result.ok:
            self.failed[role] = self.failed.get(role, 0) + 1
        return FittedCall(result, fit)

    def counts(self) -> dict[str, Any]:
        """The call counts as Transcript fields."""
        return {"n_calls": self.n_calls, "n_failed_turns": sum(self.failed.values()),
                "failed_by_role": dict(sorted(self.failed.items())),
                "tokens": {"in": self.tokens_in, "out": self.tokens_out}, "context_cuts": self.cuts,
                "n_context_cuts": sum(1 for x in self.cuts if not x["exhausted"])}
