"""The Tier-3 sample of an imported run: N channel messages stratified by model, vertical and channel
(largest-remainder allocation), for the judge, where every message of 4,979 traces is too many.

The unit is one channel message (a judge call judges one channel's content), so the channel can be a
stratum: each (model, vertical, channel) cell gets its share of N in proportion to its size. The
sample is drawn once, at import, and written to the run (``SAMPLE_FILE``); the judge stage and the
report read it from there.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from collections.abc import Hashable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeVar

from localbench.benchmarks.agentleak.published.traces import UPSTREAM_CHANNELS
from localbench.runlog import Transcript

SAMPLE_FILE = "tier3_sample.jsonl"
STRATA = "model × vertical × channel"
T = TypeVar("T")


@dataclass(frozen=True)
class SampledMessage:
    """One channel message of the Tier-3 sample: its trace (transcript key), its entry and its stratum."""

    key: str
    index: int
    channel: str
    model: str
    vertical: str

    @property
    def stratum(self) -> tuple[str, str, str]:
        return (self.model, self.vertical, self.channel)


def stratified(items: Sequence[T], stratum_of, n: int, seed: int = 0) -> list[T]:
    """``n`` of ``items``, each stratum in proportion to its size (largest remainder), drawn with ``seed``."""
    if n < 1:
        raise ValueError("--sample must be at least 1")
    if n >= len(items):
        return list(items)
    strata: dict[Hashable, list[T]] = defaultdict(list)
    for x in items:
        strata[stratum_of(x)].append(x)
    quota = {k: n * len(v) / len(items) for k, v in strata.items()}
    take = {k: int(q) for k, q in quota.items()}
    for k in sorted(quota, key=lambda k: (-(quota[k] - take[k]), k))[: n - sum(take.values())]:
        take[k] += 1
    rng = random.Random(seed)
    out: list[T] = []
    for k in sorted(strata):
        out += rng.sample(strata[k], take[k])
    return out


def channel_messages(transcripts: Sequence[Transcript]) -> list[SampledMessage]:
    """Every C1, C2 and C5 message with content, in key and entry order (the population sampled)."""
    return [SampledMessage(t.key, e.index, e.channel, t.model, t.category)
            for t in sorted(transcripts, key=lambda t: t.key) for e in t.entries
            if e.channel in UPSTREAM_CHANNELS and e.content.strip()]


def stratified_sample(transcripts: Sequence[Transcript], n: int, seed: int = 0) -> list[SampledMessage]:
    """``n`` channel messages stratified by model, vertical and channel, in key and entry order."""
    picked = stratified(channel_messages(transcripts), lambda m: m.stratum, n, seed)
    return sorted(picked, key=lambda m: (m.key, m.index))


def write_sample(path: Path, sample: Sequence[SampledMessage]) -> None:
    from localbench.files import write_lines_atomic

    write_lines_atomic(path, (json.dumps(asdict(m)) for m in sample))


def read_sample(run_dir: Path) -> list[SampledMessage] | None:
    """The run's Tier-3 sample, or None when it was imported without ``--sample``."""
    path = Path(run_dir) / SAMPLE_FILE
    if not path.is_file():
        return None
    from localbench.errors import UserError

    out = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        try:
            out.append(SampledMessage(**json.loads(line)))
        except (ValueError, TypeError) as e:
            raise UserError(f"{path}:{n}: not a sampled message ({e})") from e
    return out
