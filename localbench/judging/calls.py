"""What one judge request is, independent of the benchmark that makes it.

A benchmark builds ``JudgeCall``s from its own records (scenarios, transcripts) and says how an
answer decodes back into its terms; everything below the benchmark — the runner, the gold-set
eval, the labelling tool — handles calls only through this module. ``render_lines`` is the one
transcript format every judge (and every human annotator) sees.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Protocol

from localbench.judging.rubrics import rubric_hash
from localbench.serving.prompt_counts import prompt_tokens  # noqa: F401 - also imported from here

if TYPE_CHECKING:
    from localbench.runlog import Transcript

Fits = Callable[[list[dict[str, str]]], bool]


@dataclass
class JudgeCall:
    """One judge request and how to read its answer back."""

    judge: str  # the benchmark's name for this judge (ASB: privacy | privacy_pairs | abstraction | ...)
    target: str  # what it labels: "all", an owner id, a message chunk ("#k" suffix when chunked)
    rubric: str  # template path under judges/
    messages: list[dict[str, str]]
    schema: dict[str, Any]
    keymap: dict[str, Any] = field(default_factory=dict)  # schema key -> item id / message index / ...
    truncated: int = 0  # messages dropped to fit
    n_messages: int = 0  # messages shown; with none the label is known without asking a model
    shown: str = ""  # the text under judgment as the judge saw it, for checks that its quotes come from it

    @property
    def rubric_hash(self) -> str:
        return rubric_hash(self.rubric)

    def record_fields(self, t: Transcript, **more: Any) -> dict[str, Any]:
        """What a ``Judgment`` of this call on simulation ``t`` records besides its
        label: which simulation, and this call's judge, target, rubric, schema and size."""
        return {"sim_key": t.key, "scenario": t.scenario, "category": t.category, "condition": t.condition,
                "seed_index": t.seed_index, "model": t.model, "judge": self.judge, "target": self.target,
                "rubric": self.rubric, "rubric_hash": self.rubric_hash, "schema_hash": schema_hash(self.schema),
                "n_messages": self.n_messages, "truncated": self.truncated, **more}


class ItemJudge(Protocol):
    """A benchmark's item-leakage judge, as the gold-set tools ask it.

    ``items_call`` builds the call for one owner's private items, given as (item id, text) pairs,
    over a transcript rendered by ``render_lines``; ``decode`` turns the parsed answer into a label
    of the form ``{"levels": {item id: "none" | "partial" | "full"}, ...}``. A gold eval asks the
    judge exactly as the benchmark does, so its agreement numbers are about the benchmark's judge.
    """

    rubric: str
    metrics: str  # the benchmark metrics its labels feed, in words (for verdicts)

    def items_call(self, owner_name: str, items: list[tuple[str, str]], transcript: str,
                   target: str = "all") -> JudgeCall: ...

    def decode(self, call: JudgeCall, parsed: dict[str, Any]) -> dict[str, Any]: ...


def render_lines(messages: list[dict[str, Any]], name: Callable[[str], str] = str,
                 keys: list[str] | None = None) -> str:
    """One line per message, ``[key] sender → recipients: content``; ``name`` maps a participant to its display name."""
    lines = []
    for i, m in enumerate(messages):
        k = keys[i] if keys else str(m.get("index", i))
        to = ", ".join(name(r) for r in (m.get("recipients") or [])) or "everyone"
        lines.append(f"[{k}] {name(m.get('sender', '?'))} → {to}: {m.get('content', '')}")
    return "\n".join(lines) if lines else "(no messages)"


def schema_hash(schema: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(schema, sort_keys=True).encode()).hexdigest()[:16]


def too_long(client: Any, messages: list[dict[str, str]], max_tokens: int) -> str | None:
    """Why this prompt cannot be sent to the client's model (no room for ``max_tokens`` of answer
    in its context window), or None when it fits. The text is recorded as the judgment's failure."""
    backend = client.backend
    n = prompt_tokens(backend, messages)
    if n + max_tokens <= backend.max_model_len:
        return None
    return (f"prompt does not fit the context of '{backend.identity.preset}': {n} prompt tokens + "
            f"max_tokens {max_tokens} > max_model_len {backend.max_model_len} (not sent)")


def fits_in(client: Any, max_tokens: int) -> Fits:
    """Whether a prompt leaves room for ``max_tokens`` of answer in the client's context window."""

    def fits(messages: list[dict[str, str]]) -> bool:
        return too_long(client, messages, max_tokens) is None

    return fits
