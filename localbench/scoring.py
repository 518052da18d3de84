"""From per-simulation metric values to scores.json, the same way for every benchmark.

A benchmark computes each simulation's metrics (``ScenarioScore`` records); this aggregates them
as its design declares: macro over scenarios (the seeds of one scenario are averaged first), a 95%
percentile bootstrap CI over scenarios (1,000 resamples) per (model, condition, category), the
catalogue's pooled metrics also over every category (``ALL``), its grouped metrics also per group,
and paired comparisons of each category's headline metric (sign-flip permutation p-value and
bootstrap CI of the difference, 10,000 resamples, paired by scenario id) between every condition and
the first for each model, and between every two models at each condition. A leaf.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from pathlib import Path

from localbench.design import ALL, Design
from localbench.runlog import RunPaths, ScenarioScore, write_records
from localbench.scores import PairedComparison, ScoreRow, Scores
from localbench.stats import bootstrap_ci, mcnemar_test, paired_bootstrap_test, wilson_ci

CI_RESAMPLES = 1000
TEST_RESAMPLES = 10000


def per_scenario(records: list[ScenarioScore], metric: str) -> tuple[dict[str, float], int, int]:
    """Scenario id → value (mean over seeds with a value); how many scenarios have no value
    because they failed; and how many simulations failed (a scenario's other seeds may cover one)."""
    vals: dict[str, list[float]] = defaultdict(list)
    failed: set[str] = set()
    n_sims = 0
    for r in records:
        if metric in r.failed:
            failed.add(r.scenario)
            n_sims += 1
        v = r.metrics.get(metric)
        if v is not None:
            vals[r.scenario].append(float(v))
    means = {k: sum(v) / len(v) for k, v in vals.items()}
    return means, len(failed - set(means)), n_sims


def per_simulation(records: list[ScenarioScore], metric: str) -> tuple[list[float], int]:
    """Every simulation's value of a proportion metric (0/1), and how many simulations failed it."""
    values = [float(r.metrics[metric]) for r in records if r.metrics.get(metric) is not None]
    bad = [v for v in values if v not in (0.0, 1.0)]
    if bad:
        raise ValueError(f"metric '{metric}' is declared a proportion (interval wilson) but a simulation gave {bad[0]}")
    return values, sum(1 for r in records if metric in r.failed)


def _row(design: Design, metric: str, model: str, judge: str, condition: str, category: str,
         records: list[ScenarioScore], seed: int, group: str = "") -> ScoreRow | None:
    per, n_failed, n_failed_sims = per_scenario(records, metric)
    if not per and not n_failed and not any(metric in r.metrics for r in records):
        return None  # not a metric of these simulations; one undefined in all of them keeps its n=0 row
    if design.metric(metric).interval == "wilson":  # a proportion of simulations
        values, failed = per_simulation(records, metric)
        ci = wilson_ci(int(sum(values)), len(values))
        n_failed = failed
    else:
        ci = bootstrap_ci(list(per.values()), n_resamples=CI_RESAMPLES, seed=seed)
    ok = ci.n > 0
    return ScoreRow(metric=metric, model=model, judge=judge, condition=condition, category=category, group=group,
                    mean=ci.estimate if ok else None, ci_low=ci.low if ok else None,
                    ci_high=ci.high if ok else None, n=ci.n, n_failed=n_failed, n_failed_sims=n_failed_sims,
                    higher_is_better=design.higher_is_better(metric))


def _metrics_in(records: list[ScenarioScore]) -> list[str]:
    names: dict[str, None] = {}
    for r in records:
        for k in list(r.metrics) + r.failed:
            names.setdefault(k, None)
    return list(names)


def aggregate(records: list[ScenarioScore], design: Design, run_id: str, judge: str, seed: int = 0) -> Scores:
    """scores.json's rows and comparisons from per-simulation records (see the module docstring)."""
    scores = Scores(run_id=run_id, benchmark=design.name,
                    bootstrap={"n_resamples": CI_RESAMPLES, "confidence": 0.95, "seed": seed,
                               "unit": "scenario", "test_resamples": TEST_RESAMPLES,
                               "test": "paired by scenario id"})
    groups: dict[tuple[str, str, str], list[ScenarioScore]] = defaultdict(list)
    for r in records:
        groups[(r.model, r.condition, r.category)].append(r)
        groups[(r.model, r.condition, ALL)].append(r)
    grouped = [m.name for m in design.metrics if m.grouped]
    for (model, condition, cat), recs in sorted(groups.items()):
        metrics = design.pooled_metrics if cat == ALL else _metrics_in(recs)
        for metric in metrics:
            row = _row(design, metric, model, judge, condition, cat, recs, seed)
            if row:
                scores.rows.append(row)
        for metric in grouped:
            if cat == ALL and metric not in design.pooled_metrics:
                continue
            by_group: dict[str, list[ScenarioScore]] = defaultdict(list)
            for r in recs:
                if r.group:
                    by_group[r.group].append(r)
            for group, grs in sorted(by_group.items()):
                row = _row(design, metric, model, judge, condition, cat, grs, seed, group=group)
                if row:
                    scores.rows.append(row)
    scores.comparisons = comparisons(records, design, seed) + metric_pairs(records, design, seed)
    return scores


def comparisons(records: list[ScenarioScore], design: Design, seed: int = 0) -> list[PairedComparison]:
    """Paired tests of the headline metrics: each condition against the first (in the condition axis's
    order), each pair of models."""
    out = []
    models = sorted({r.model for r in records})
    conditions = design.condition.order([r.condition for r in records])
    cats = [c for c in dict.fromkeys(r.category for r in records) if c in design.headline]

    mcnemar = design.paired_test == "mcnemar"

    def series(model: str, condition: str, cat: str, metric: str) -> dict[str, float]:
        recs = [r for r in records if r.model == model and r.condition == condition and r.category == cat]
        if mcnemar:  # paired by simulation (scenario and seed), each a 0/1 outcome
            return {f"{r.scenario}|{r.seed_index}": float(r.metrics[metric]) for r in recs
                    if r.metrics.get(metric) is not None}
        return per_scenario(recs, metric)[0]

    def compare(metric: str, cat: str, a: str, b: str, fixed: str, sa: dict, sb: dict) -> PairedComparison:
        return _compare(metric, cat, a, b, fixed, sa, sb, seed, discordant(sa, sb) if mcnemar else None)

    for cat in cats:
        metric = design.headline[cat]
        for model in models:
            for lv in conditions[1:]:
                out.append(compare(metric, cat, conditions[0], lv, model, series(model, conditions[0], cat, metric),
                                   series(model, lv, cat, metric)))
        for lv in conditions:
            for ma, mb in itertools.combinations(models, 2):
                out.append(compare(metric, cat, ma, mb, lv, series(ma, lv, cat, metric), series(mb, lv, cat, metric)))
    return out


def metric_pairs(records: list[ScenarioScore], design: Design, seed: int = 0) -> list[PairedComparison]:
    """The design's ``paired_metrics``: metric a against metric b on the same simulations, per model
    and condition over every category."""
    out = []
    mcnemar = design.paired_test == "mcnemar"
    for a, b in design.paired_metrics:
        for model in sorted({r.model for r in records}):
            for condition in design.condition.order([r.condition for r in records]):
                recs = [r for r in records if r.model == model and r.condition == condition]
                sa = {r.key: float(r.metrics[a]) for r in recs if r.metrics.get(a) is not None and r.metrics.get(b) is not None}
                sb = {r.key: float(r.metrics[b]) for r in recs if r.key in sa}
                out.append(_compare(f"{a} vs {b}", ALL, a, b, f"{model} · {condition}", sa, sb, seed,
                                    discordant(sa, sb) if mcnemar else None))
    return out


def _compare(metric: str, cat: str, a: str, b: str, fixed: str, sa: dict[str, float], sb: dict[str, float],
             seed: int, mcnemar: tuple[int, int] | None = None) -> PairedComparison:
    t = paired_bootstrap_test(sb, sa, n_resamples=TEST_RESAMPLES, seed=seed)  # diff = b − a

    def num(x: float | None) -> float | None:
        return None if x is None or math.isnan(x) else float(x)

    p = num(t.p_value)
    if mcnemar is not None:  # 0/1 outcomes paired by simulation: McNemar's test on the discordant pairs
        p = mcnemar_test(*mcnemar).p_value if t.n_pairs else None
    return PairedComparison(metric=metric, category=cat, a=a, b=b, fixed=fixed, diff=num(t.diff),
                            ci_low=num(t.ci_low), ci_high=num(t.ci_high), p_value=p, n_pairs=t.n_pairs,
                            test="mcnemar" if mcnemar is not None else "sign-flip")


def discordant(sa: dict[str, float], sb: dict[str, float]) -> tuple[int, int]:
    """(pairs where only a is 1, pairs where only b is 1) over the keys both have."""
    both = sa.keys() & sb.keys()
    return (sum(1 for k in both if sa[k] >= 0.5 > sb[k]), sum(1 for k in both if sb[k] >= 0.5 > sa[k]))


def keep_metrics(records: list[ScenarioScore], keep) -> list[ScenarioScore]:
    """The records with only the metrics ``keep(name)`` accepts (a leakage-only rejudge)."""
    return [r.model_copy(update={"metrics": {k: v for k, v in r.metrics.items() if keep(k)},
                                 "failed": [k for k in r.failed if keep(k)]}) for r in records]


def write_scores(run_dir: Path, records: list[ScenarioScore], scores: Scores) -> None:
    """scenario_scores.jsonl and scores.json, each replaced whole."""
    paths = RunPaths(run_dir)
    write_records(paths.scenario_scores_path, records)
    scores.write(paths.scores_path)
