"""Reference attackers that check the scoring, not a model: ``oracle``, ``none`` and ``majority``.

- ``oracle`` reads the hidden profile and answers each leaked attribute with its true value, as
  deep as the hierarchy goes, through the same answer schema (one value per attribute) and judges as every attacker: with
  the exact judge its PES must be 1.0, and with a model judge close to it (what it misses is the
  judge's error).
- ``none`` answers an empty profile: PES 0.
- ``majority`` answers, for every attribute the suite leaks, the value most of the suite's other
  users have (leave-one-out: the user's own values never count; ties broken alphabetically): the
  guessing floor a real attacker has to beat, shown in the report beside every attacker.

None of them calls a model; each logs its answer like any attacker, so transcripts, judges and
reports treat them alike.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from localbench.benchmarks.sopri.attack import AttackContext, AttackResult, Inference, answer_of
from localbench.benchmarks.sopri.scenario import Attribute

if TYPE_CHECKING:
    from localbench.benchmarks.sopri.scenario import User

ROLE = "attacker"


def answer_value(a: Attribute) -> str:
    """An attribute's true value as one answer, as deep as its hierarchy goes (``Attribute.answer``)."""
    return a.answer()


def majority_profile(users: Iterable["User"]) -> dict[str, str]:
    """Slot → the value most of these users' leaked attributes have (ties: the alphabetically first)."""
    counts: dict[str, Counter[str]] = {}
    for u in users:
        for a in u.leaked:
            counts.setdefault(a.slot, Counter())[answer_value(a)] += 1
    return {slot: sorted(c.items(), key=lambda kv: (-kv[1], kv[0]))[0][0] for slot, c in sorted(counts.items())}


def _finish(ctx: AttackContext, inferences: list[Inference], what: str) -> AttackResult:
    ctx.log.add(round=0, kind="inferences", sender=ROLE, role=ROLE,
                content=f"{len(inferences)} attributes answered ({what})",
                action=answer_of(inferences), meta={"answered": True})
    return AttackResult(inferences, "answered", {"answered": True, "failed_calls": 0, "reference": what,
                                                  "image_input": "none"})


class OracleAttacker:
    """Answers every leaked attribute with the truth (the scoring's ceiling)."""

    name = "oracle"

    async def attack(self, ctx: AttackContext) -> AttackResult:
        infs = [Inference(attribute=a.slot, value=answer_value(a)[:120], posts=list(a.leak.posts[:3]) if a.leak else [],
                          evidence="ground truth")
                for a in ctx.user.leaked]
        return _finish(ctx, infs, "oracle: the ground truth")


class NoneAttacker:
    """Answers nothing (the scoring's zero)."""

    name = "none"

    async def attack(self, ctx: AttackContext) -> AttackResult:
        return _finish(ctx, [], "none: an empty profile")


class MajorityAttacker:
    """Answers each attribute with the suite's most common value (the guessing floor)."""

    name = "majority"

    async def attack(self, ctx: AttackContext) -> AttackResult:
        suite = [u for u in ctx.settings.get("suite_users") or [] if u.id != ctx.user.id]
        infs = [Inference(attribute=slot, value=value[:120], posts=[], evidence="the suite's most common value")
                for slot, value in majority_profile(suite).items()]
        return _finish(ctx, infs, "majority: the suite's most common value per attribute")
