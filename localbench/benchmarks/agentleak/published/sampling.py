"""A sample of imported traces stratified by model and vertical (largest-remainder allocation), for
the expensive routes (a Tier-3 judge) where all 4,979 traces are too many."""

from __future__ import annotations

import random
from collections import defaultdict

from localbench.records import Transcript


def stratified_sample(transcripts: list[Transcript], n: int, seed: int = 0) -> list[Transcript]:
    """``n`` transcripts, each (model, vertical) stratum in proportion to its size, drawn with ``seed``."""
    if n < 1:
        raise ValueError("--sample must be at least 1")
    if n >= len(transcripts):
        return list(transcripts)
    strata: dict[tuple[str, str], list[Transcript]] = defaultdict(list)
    for t in transcripts:
        strata[(t.model, t.category)].append(t)
    total = len(transcripts)
    quota = {k: n * len(v) / total for k, v in strata.items()}
    take = {k: int(q) for k, q in quota.items()}
    for k in sorted(quota, key=lambda k: (-(quota[k] - take[k]), k))[: n - sum(take.values())]:
        take[k] += 1
    rng = random.Random(seed)
    out = []
    for k in sorted(strata):
        out += rng.sample(strata[k], take[k])
    return sorted(out, key=lambda t: t.key)
