"""SopriBench gold from minimal pairs (``localbench.judging.pairs.value_pair``).

A SopriBench gold item is an attacker's guess of one leaked attribute, graded against the truth.
Each pair guesses the user's value over another user's value of the same slot, and its twin the
other way round: both guesses carry the same words (both values, the same negation or
supposition), so a matcher that looks for the true value's tokens cannot tell them apart. Two leak
types: ``exact`` (the truth as deep as the posts reveal it; full) and ``coarse`` (a hierarchical
attribute's first level only, revealed deeper; partial). The twin's other value departs from the
truth at the first level, so the twin is wrong ("none"). Paraphrase and inference do not apply:
a guess is a value, not a sentence about a person (the build says so).
"""

from __future__ import annotations

import random

from localbench.benchmarks.sopri.judges import (GOLD_METHODS, _value_at, build_gold as build_by_method, gold_id,
                                               revealed_truth)
from localbench.benchmarks.sopri.taxonomy import slot_of
from localbench.judging.gold import GoldItem, GoldPrivateItem
from localbench.judging.pairs import value_pair
from localbench.serving.seeds import derive_seed

PAIR_KINDS = {"exact": "full", "coarse": "partial"}


def _others(users, u, a, level: int) -> list[str]:
    """Other users' values of the slot that differ from the truth at the first level, cut at ``level``."""
    out = set()
    for o in users:
        b = o.attribute(a.slot) if o.id != u.id else None
        if b is None:
            continue
        if a.path and b.path:
            if b.path[0].strip().lower() != a.path[0].strip().lower():
                out.add(_value_at(b, level))
        elif b.value.strip().lower() != a.value.strip().lower():
            out.add(b.value)
    return sorted(out)


def build_gold(users, seed: int = 0, methods: list[str] | None = None, variants: int = 1) -> list[GoldItem]:
    users = list(users)
    if methods is not None and not all(m in PAIR_KINDS for m in methods):
        return build_by_method(users, seed=seed, methods=methods, variants=variants)
    kinds = list(methods or PAIR_KINDS)
    out: list[GoldItem] = []
    for u in users:
        for a in u.leaked:
            slot = slot_of(a.slot)
            depth, truth = revealed_truth(a)
            item = GoldPrivateItem(owner=u.nickname, text=truth, field=a.slot, id=a.slot)
            for kind in kinds:
                if kind == "coarse" and not (slot.hierarchical and depth >= 2):
                    continue
                level = depth if kind == "exact" else 1
                others = _others(users, u, a, level)
                if not others:
                    continue
                other = random.Random(derive_seed(seed, "gold", u.id, a.slot, kind)).choice(others)
                out += value_pair(u.id, u.cohort, item, lambda side, k=kind: gold_id(u.id, a, f"{k}_{side}"), a.slot,
                                  _value_at(a, level), other, PAIR_KINDS[kind], kind, seed)
    return out


assert set(PAIR_KINDS) <= set(GOLD_METHODS)  # the pair types are the per-method construction's leak methods
