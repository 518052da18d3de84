"""What the judges' measured reliability means for finished runs (`localbench judges report --run`).

For each run, every judge that labelled it (its own judge stage, each `judges rejudge`, and a
planted run's construction labels) is scored by the run's benchmark's metric code; the result is
each leakage metric per judge, the pooled leak rate corrected with each judge's gold FPR/FNR
(Rogan–Gladen, its interval resampling scenarios) and Kendall's τ between judges' rankings of the
agent models (from ``MIN_MODELS_TO_RANK`` models on; fewer are "too few models to rank"). The records and the
correction itself are in ``localbench.judging.reliability``; this module reads run directories
and calls the benchmark, so it sits beside the pipeline.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict
from pathlib import Path

from localbench.benchmarks import Benchmark
from localbench.design import ALL
from localbench.runlog import Judgment, ScenarioScore
from localbench.judging.reliability import (
    Consequences,
    CorrectedRate,
    MIN_MODELS_TO_RANK,
    JudgeReliability,
    MetricRow,
    MetricValue,
    RankAgreement,
    corrected_rate,
)
from localbench.judging.categories import NOT_IDENTIFIED, category_rate, design_effect
from localbench.judging.trust import UnitCounts, unit_counts
from localbench.rejudge import LoadedRun, run_judgments
from localbench.stats import PrevalenceCI, kendall_tau


def _unit_counts(run: LoadedRun, records: list[Judgment]) -> dict[tuple[str, str, str], UnitCounts]:
    """(model, condition, category) → leaked units and units per scenario (a scenario's seeds pooled)."""
    return unit_counts(run.benchmark, run.transcripts, records, run.scenarios)


def _metric_means(bm: Benchmark, records: list[ScenarioScore], run_id: str, judge: str,
                  seed: int) -> dict[tuple, MetricValue]:
    from localbench.scoring import aggregate

    scores = aggregate(records, bm.design, run_id, judge, seed=seed)
    return {(r.model, r.condition, r.category, r.metric): MetricValue(r.mean, r.ci_low, r.ci_high, r.n, r.n_failed)
            for r in scores.rows if not r.group and r.category != "ALL"}


def consequences(runs: list[str | Path], gold: dict[str, JudgeReliability], seed: int = 0) -> Consequences:
    """Metrics per judge, Rogan–Gladen-corrected leak rates and Kendall τ of model rankings."""
    metric_rows: list[MetricRow] = []
    corrected: list[CorrectedRate] = []
    notes: list[str] = []
    judges_seen: list[str] = []
    # (scope) -> judge -> model -> value, for rankings
    rank_data: dict[str, dict[str, dict[str, float]]] = defaultdict(lambda: defaultdict(dict))
    models_seen: dict[str, set[str]] = defaultdict(set)
    per_run = []
    benchmarks: dict[str, Benchmark] = {}
    for run_dir in runs:
        run = LoadedRun.read(run_dir)
        sources = run_judgments(run)
        if not sources:
            notes.append(f"{run_dir}: no judgments (neither the run's own nor any rejudge)")
            continue
        bm = benchmarks.setdefault(run.spec.benchmark, run.benchmark)
        run_id = run.spec.resolved_run_id
        values: dict[tuple, dict[str, MetricValue]] = defaultdict(dict)
        for src in sources:
            if src.judge not in judges_seen:
                judges_seen.append(src.judge)
            recs = run.score(src.judge, src.records, leakage_only=True)
            for key, mv in _metric_means(bm, recs, run_id, src.judge, seed).items():
                values[key][src.judge] = mv
            counts = _unit_counts(run, src.records)
            pooled: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            every: dict[tuple[str, str], UnitCounts] = defaultdict(UnitCounts)  # (model, condition): all categories
            note = "the planted labels: the truth" if src.judge == bm.planted_judge else ""
            deffs: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
            for (model, condition, _cat), uc in counts.items():
                deffs[(model, condition)] += uc.pairs()
            for (model, condition, cat), uc in sorted(counts.items()):
                models_seen[run_id].add(model)
                pooled[model][0] += uc.k
                pooled[model][1] += uc.n
                corrected.append(_correct(run_id, model, condition, cat, src.judge, uc, gold.get(src.judge), seed, note,
                                          deff=design_effect(deffs[(model, condition)])))
                both = every[(model, condition)]
                both.clusters.update({f"{cat}/{sc}": list(kn) for sc, kn in uc.clusters.items()})
                both.n_failed += uc.n_failed
            if len({cat for _, _, cat in counts}) > 1:
                for (model, condition), uc in sorted(every.items()):
                    corrected.append(_correct(run_id, model, condition, ALL, src.judge, uc, gold.get(src.judge), seed,
                                              note))
            for model, (k, n) in pooled.items():
                if n:
                    rank_data["all units (pooled leak rate)"][src.judge][f"{run_id}/{model}"] = k / n
        for (model, condition, cat, metric), by_judge in sorted(values.items()):
            means = [v.mean for v in by_judge.values() if v.mean is not None]
            metric_rows.append(MetricRow(run_id, model, condition, cat, metric, by_judge,
                                         (max(means) - min(means)) if len(means) >= 2 else None))
            if metric == bm.design.headline.get(cat):
                for j, v in by_judge.items():
                    if v.mean is not None:
                        rank_data[f"{cat} {condition} {metric}"][j][f"{run_id}/{model}"] = v.mean
        per_run.append(run_id)
    ranks = []
    for scope, by_judge in sorted(rank_data.items()):
        for a, b in itertools.combinations(sorted(by_judge), 2):
            shared = len(by_judge[a].keys() & by_judge[b].keys())
            tau = kendall_tau(by_judge[a], by_judge[b]) if shared >= MIN_MODELS_TO_RANK else None
            ranks.append(RankAgreement(scope, a, b, tau, _ranking(by_judge[a]), _ranking(by_judge[b]), shared))
    n_models = len({f"{run}/{m}" for run, ms in models_seen.items() for m in ms})
    if n_models < MIN_MODELS_TO_RANK:
        notes.append(f"too few models to rank: Kendall's τ needs at least {MIN_MODELS_TO_RANK} agent models, "
                     f"these runs have {n_models}, so the judges' rankings are shown but not compared")
    if len(judges_seen) < 2:
        notes.append("only one judge labelled these runs; rejudge them (`localbench judges rejudge`) to compare")
    categories = {c.category for c in corrected}
    for bm in benchmarks.values():
        notes += bm.consequence_notes(categories)
    return Consequences(tuple(per_run), tuple(judges_seen), tuple(metric_rows), tuple(corrected), tuple(ranks),
                        tuple(notes))


def for_runs(runs: list[str | Path], seed: int = 0):
    """``consequences`` for these runs, in the form ``judging.reliability.reliability`` takes it."""
    return lambda gold: consequences(runs, gold, seed=seed)


def _ranking(values: dict[str, float]) -> tuple[str, ...]:
    return tuple(k for k, _ in sorted(values.items(), key=lambda kv: (-kv[1], kv[0])))


def _correct(run: str, model: str, condition: str, cat: str, judge: str, uc: UnitCounts,
             rel: JudgeReliability | None, seed: int, truth_note: str = "", deff: float | None = None) -> CorrectedRate:
    k, n = uc.k, uc.n
    observed = k / n if n else math.nan
    if rel is None or rel.gold is None:
        note = truth_note or "no gold measurement for this judge"
        return CorrectedRate(run, model, condition, cat, judge, k, n, uc.n_failed, observed, None, note)
    if rel.verdict.grade == "incomplete":
        return CorrectedRate(run, model, condition, cat, judge, k, n, uc.n_failed, observed, None,
                             "its gold eval is incomplete: no error rates to correct with")
    lk = rel.gold.leak
    if deff is not None and n and lk.n_neg > 0 and lk.n_pos > 0:  # one category: see judging.categories
        cr = category_rate(k, n, lk.fp, lk.n_neg, lk.fn, lk.n_pos, deff, seed=seed)
        if not cr.identified:
            return CorrectedRate(run, model, condition, cat, judge, k, n, uc.n_failed, observed, None,
                                 f"{NOT_IDENTIFIED}: {k}/{n} units over {len(uc.clusters)} scenarios do not pin the "
                                 "corrected rate down with this judge's error rates", n_scenarios=len(uc.clusters))
        ci = PrevalenceCI(cr.estimate, cr.low, cr.high, observed, lk.fp / lk.n_neg, lk.fn / lk.n_pos, n, lk.n_neg,
                          lk.n_pos, 0.95, 4000, round(cr.undefined_share * 4000), seed,
                          f"{cr.method}; design effect {cr.design_effect:.2f}")
        return CorrectedRate(run, model, condition, cat, judge, k, n, uc.n_failed, observed, ci, truth_note,
                             n_scenarios=len(uc.clusters))
    rg = corrected_rate(uc.pairs(), rel.gold, seed)
    note = "" if rg is not None else "gold set lacks leaks or non-leaks, or no units"
    return CorrectedRate(run, model, condition, cat, judge, k, n, uc.n_failed, observed, rg, note,
                         n_scenarios=len(uc.clusters))
