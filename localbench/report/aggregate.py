"""Estimates the report shows that scores.json does not hold directly: leakage pooled over
several categories (e.g. a benchmark's dyadic ones, or all of them).

A category's headline metric (the design's) is turned into a leak rate (a higher-is-better
compliance score x becomes 1 − x), averaged over seeds per scenario, and bootstrapped over
scenarios with the run's own bootstrap settings. Without scenario_scores.jsonl the pooled value is
the n-weighted mean of the category means, with no CI.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

from localbench.design import ALL
from localbench.runlog import ScenarioScore
from localbench.report.data import RunData
from localbench.scores import ScoreRow
from localbench.stats import bootstrap_ci


@dataclass(frozen=True)
class Estimate:
    """A table cell: mean with an optional CI, its n and how many units failed."""

    mean: float | None
    low: float | None = None
    high: float | None = None
    n: int = 0
    n_failed: int = 0  # scenarios left without a value by failures
    higher_is_better: bool = False
    n_failed_sims: int = 0  # simulations that could not be scored (their scenario may still have a value)
    where: tuple[tuple[str, str], ...] = ()  # the simulations behind it, as viewer filters (model, condition, ...)

    @classmethod
    def from_row(cls, row: ScoreRow | None, default_hib: bool = False) -> "Estimate":
        if row is None:
            return cls(None, higher_is_better=default_hib)
        return cls(_finite(row.mean), _finite(row.ci_low), _finite(row.ci_high), row.n, row.n_failed,
                   row.higher_is_better, row.n_failed_sims, where=behind(row.model, row.condition, [row.category], row.judge))

    @property
    def any_failed(self) -> bool:
        """Whether a failure lies behind this cell (the table marks it with a dagger)."""
        return self.n_failed > 0 or self.n_failed_sims > 0

    @property
    def has_ci(self) -> bool:
        return self.low is not None and self.high is not None


def behind(model: str, condition: str, categories: Iterable[str], judge: str | None) -> tuple[tuple[str, str], ...]:
    """Viewer filters for the simulations a cell was computed from (every category when ALL)."""
    cats = [c for c in categories if c != ALL]
    where = [("model", model), ("condition", condition)] + ([("category", ",".join(cats))] if cats else [])
    return tuple(where + ([("judge", judge)] if judge else []))


def _finite(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def bootstrap_settings(run: RunData) -> dict:
    b = run.scores.bootstrap or {}
    return {"n_resamples": int(b.get("n_resamples", 1000)), "confidence": float(b.get("confidence", 0.95)),
            "seed": int(b.get("seed", 0))}


def _as_leak(run: RunData, metric: str, value: float) -> float:
    return 1.0 - value if run.design.higher_is_better(metric) else value


Pick = Callable[[ScenarioScore], "tuple[float | None, bool] | None"]


def _pool(run: RunData, model: str, condition: str, judge: str | None, pick: Pick) -> Estimate:
    """Bootstrap over scenarios of the values ``pick`` takes from each simulation.

    ``pick`` returns None for a simulation that does not count, else (value or None, failed).
    Seeds of one scenario are averaged; a scenario with no value and a failure counts in
    n_failed, one with no value and no failure (an undefined metric) is left out.
    """
    assert run.scenarios is not None
    per_unit: dict[tuple[str, str], list[float]] = defaultdict(list)
    failed: set[tuple[str, str]] = set()
    n_sims = 0
    for s in run.scenarios:
        if s.model != model or s.condition != condition or (judge is not None and s.judge != judge):
            continue
        got = pick(s)
        if got is None:
            continue
        v, bad = got
        unit = (s.category, s.scenario)
        if v is not None and math.isfinite(v):
            per_unit[unit].append(v)
        elif bad:
            failed.add(unit)
            n_sims += 1
    values = [sum(v) / len(v) for v in per_unit.values()]
    n_failed = len(failed - per_unit.keys())
    if not values:
        return Estimate(None, n=0, n_failed=n_failed, n_failed_sims=n_sims)
    ci = bootstrap_ci(values, **bootstrap_settings(run))
    cats = sorted({c for c, _ in per_unit} | {c for c, _ in failed})
    return Estimate(ci.estimate, ci.low, ci.high, ci.n, n_failed, n_failed_sims=n_sims,
                    where=behind(model, condition, run.ordered_categories(cats), judge))


def pooled_leak(run: RunData, model: str, condition: str, categories: Iterable[str], judge: str | None = None,
                part: Literal["", "_full", "_partial"] = "") -> Estimate:
    """Leak rate over the given categories' scenarios (headline metric of each, as a leak rate).

    ``part`` selects the full or partial share; categories whose headline is a higher-is-better
    score (which has no such split) are left out of a part.
    """
    headline, hib = run.design.headline, run.design.higher_is_better
    cats = [c for c in categories if c in headline and not (part and hib(headline[c]))]
    if run.scenarios is None:
        return _pooled_from_rows(run, model, condition, cats, judge, part)

    def pick(s: ScenarioScore):
        if s.category not in cats:
            return None
        metric = headline[s.category] + part
        v = s.metrics.get(metric)
        return (None if v is None else _as_leak(run, metric, v)), metric in s.failed

    return _pool(run, model, condition, judge, pick)


def pooled_metric(run: RunData, metric: str, model: str, condition: str, judge: str | None = None) -> Estimate:
    """One metric over every category's scenarios, for metrics scores.json does not pool (e.g. B:*)."""
    hib = run.design.higher_is_better(metric)
    if run.scenarios is None:
        return Estimate(None, higher_is_better=hib)

    def pick(s: ScenarioScore):
        if metric not in s.metrics and metric not in s.failed:
            return None
        return s.metrics.get(metric), metric in s.failed

    e = _pool(run, model, condition, judge, pick)
    return Estimate(e.mean, e.low, e.high, e.n, e.n_failed, hib, e.n_failed_sims, e.where)


def _pooled_from_rows(run: RunData, model: str, condition: str, cats: list[str], judge: str | None,
                      part: str = "") -> Estimate:
    total, n, n_failed, n_sims = 0.0, 0, 0, 0
    for c in cats:
        r = run.row(run.design.headline[c] + part, model, condition, c, judge)
        if r is None:
            continue
        n_failed += r.n_failed
        n_sims += r.n_failed_sims
        if r.mean is not None and r.n > 0:
            total += _as_leak(run, r.metric, r.mean) * r.n
            n += r.n
    return Estimate(total / n if n else None, n=n, n_failed=n_failed, n_failed_sims=n_sims)
