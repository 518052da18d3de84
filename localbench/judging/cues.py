"""Surface cues per class: a gold set must not let a label follow from how its items look.

For each class (leak = partial or full, and none) the build reports the rate of each cue:

- ``negation``: items whose messages hold a negation word (not, no, never, ...);
- ``hypothetical``: items whose messages hold a supposition word (if, suppose, would, ...);
- ``value_tokens``: items whose messages hold every content word of the private item's value;
- ``any_value_token``: items whose messages hold at least one of them;
- ``long``: items whose messages are longer than the set's median (characters).

A cue whose rate differs between the classes by more than ``MAX_GAP`` (5 points) fails the set:
the old AgentSocialBench gold had negation words in 56 of 56 negated non-leaks and in 14 of 285
leaks, so "no negation word" alone passed it.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

from localbench.judging.cheaters import HYPOTHETICAL_WORDS, NEGATION_WORDS, body, leak_of, tokens, value_words
from localbench.judging.gold import GoldItem

MAX_GAP = 0.05
CUES = ("negation", "hypothetical", "value_tokens", "any_value_token", "long")


@dataclass
class CueRate:
    cue: str
    leak: float  # share of leak items with the cue
    none: float  # share of non-leak items with the cue

    @property
    def gap(self) -> float:
        return abs(self.leak - self.none)


def cue_flags(item: GoldItem, median_len: float) -> dict[str, bool]:
    text = body(item)
    words = set(tokens(text))
    value = value_words(item)
    return {"negation": bool(words & NEGATION_WORDS), "hypothetical": bool(words & HYPOTHETICAL_WORDS),
            "value_tokens": bool(value) and value <= words, "any_value_token": bool(value & words),
            "long": len(text) > median_len}


def cue_rates(items: Sequence[GoldItem]) -> list[CueRate]:
    items = [it for it in items if it.label is not None]
    if not items:
        return []
    median_len = statistics.median(len(body(it)) for it in items)
    flags = [(leak_of(it.label), cue_flags(it, median_len)) for it in items]
    out = []
    for cue in CUES:
        rate = {}
        for cls in (1, 0):
            got = [f[cue] for c, f in flags if c == cls]
            rate[cls] = sum(got) / len(got) if got else 0.0
        out.append(CueRate(cue, rate[1], rate[0]))
    return out


def unbalanced(rates: Sequence[CueRate], max_gap: float = MAX_GAP) -> list[CueRate]:
    """The cues whose rates differ between the classes by more than ``max_gap``."""
    return [r for r in rates if r.gap > max_gap + 1e-12]


def cue_table(rates: Sequence[CueRate]) -> str:
    return "\n".join(f"  {r.cue:16s} leak {r.leak:6.1%}  none {r.none:6.1%}  gap {r.gap * 100:4.1f} pt" for r in rates)
