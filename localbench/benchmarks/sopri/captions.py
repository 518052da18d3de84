"""Caption wording for generated users: variants of a template, and no sentence shared between users.

A reader who sees the same sentence in two strangers' feeds knows the feed is generated (issue 30:
120 posts shared 91 caption sentences). So a template may offer alternatives, written
``[one|another]`` (several groups multiply), and ``SentenceLedger`` picks, for each post, a variant
none of whose sentences an earlier user of the suite has posted. Templates share structure, not
sentences. Placeholders (``{first}``) are filled before the check, so a variant that names a
profile value is usually unique already.
"""

from __future__ import annotations

import itertools
import random
import re

_GROUP = re.compile(r"\[([^\[\]]*\|[^\[\]]*)\]")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def variants(template: str) -> list[str]:
    """Every wording of ``template``: each ``[a|b|c]`` group replaced by one of its options."""
    parts = _GROUP.split(template)
    texts, groups = parts[0::2], [g.split("|") for g in parts[1::2]]
    out = []
    for choice in itertools.product(*groups):
        out.append("".join(t + c for t, c in itertools.zip_longest(texts, choice, fillvalue="")))
    return out


def sentences(text: str) -> list[str]:
    """The sentences of a caption, normalised for comparison (case and spacing folded)."""
    return [re.sub(r"\s+", " ", s).strip().casefold() for s in _SENTENCE_END.split(text) if s.strip()]


class SentenceLedger:
    """The sentences the suite's users have posted so far; ``pick`` chooses a wording not among them."""

    def __init__(self) -> None:
        self.used: dict[str, str] = {}  # sentence -> the user who posted it
        self.reused = 0  # picks for which every variant was taken (the shared-sentence test counts them)

    def pick(self, rng: random.Random, wordings: list[str], user: str) -> str:
        """One of ``wordings`` (already formatted) whose sentences no other user has posted; the first
        of a shuffled order. Records its sentences as ``user``'s."""
        order = list(wordings)
        rng.shuffle(order)
        fresh = next((w for w in order if all(self.used.get(s, user) == user for s in sentences(w))), None)
        if fresh is None:
            self.reused += 1
            fresh = order[0]
        for s in sentences(fresh):
            self.used.setdefault(s, user)
        return fresh
