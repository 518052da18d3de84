"""`localbench compare`: several runs side by side, as the papers print a comparison of models.

Each (run, model) is an *entry*; runs of one benchmark are merged into one ``RunData`` whose rows
and records carry the entry's label as their model, so the run report's own builders (its
headline-by-condition table, its comparisons table with Holm's correction) and the score stage's
paired tests (``scoring.comparisons``: seeds averaged per scenario, a bootstrap CI of the paired
difference, a sign-flip permutation or McNemar p-value as the design says) apply across runs
unchanged. What is new here is only what needs several runs: a benchmark's headline pooled over its
categories (one number per benchmark and condition), ranks with bootstrap intervals, and the marks a
cell carries from the run behind it (a judge warning, a self-judged run).

A label is the model's preset; two runs of one benchmark with the same preset and a condition in
common (which would collide) are told apart by their run folders' names (a run's id, unless copied).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from localbench.design import ALL, Design, Metric
from localbench.errors import UserError
from localbench.report.aggregate import Estimate, pooled_leak
from localbench.report.data import RunData, load_run
from localbench.report.tables import Cell, CellFormat, Column, Row, Table, comparisons_table, headline_by_condition_table
from localbench.runlog import ScenarioScore
from localbench.runlog.rundir import RESOLVED_MODELS
from localbench import scores as _scores
from localbench.scores import JudgeWarning, Scores
from localbench.scoring import comparisons, per_scenario
from localbench.stats import rank_intervals

SELF = "§"
"""Marks a number its run's agent judged itself (the judge role's preset is the primary role's)."""
WARNED = "‡"
"""Marks a number computed from labels of a judge with a warning (degenerate answers, or an evaluation
that found it no better than a cheater)."""
UNMEASURED = "°"
"""Marks a number computed from labels of a judge no gold eval measured (``scores.UNMEASURED``)."""
SELF_JUDGING = getattr(_scores, "SELF_JUDGING", "self_judging")
"""The pattern of the warning the score stage records for a self-judged run (marked § here, not ‡)."""
LEAK = "leak rate"
"""The pooled headline of a benchmark whose categories have different headline metrics: each category's
headline as a leak rate (a compliance score x as 1 − x), averaged over every scenario."""


@dataclass
class Entry:
    """One model of one run: a row of the comparison."""

    run: RunData
    model: str  # the preset, as the run's rows name it
    label: str = ""  # unique within its benchmark
    self_judged: bool = False
    warnings: list[JudgeWarning] = field(default_factory=list)

    @property
    def benchmark(self) -> str:
        return self.run.design.name

    @property
    def run_id(self) -> str:
        return self.run.run_id

    def marks(self, metric: str) -> str:
        """What a cell of ``metric`` from this entry carries: ‡ when a warning's metrics include it (a
        warning naming no metric, a judge evaluation's verdict, touches every metric), § when self-judged."""
        def touches(w: JudgeWarning) -> bool:
            return bool(not w.metrics or metric in w.metrics or metric == LEAK and
                        set(w.metrics) & set(self.run.design.headline.values()))

        warned = any(touches(w) for w in self.warnings if w.pattern not in (SELF_JUDGING, _scores.UNMEASURED))
        unmeasured = any(touches(w) for w in self.warnings if w.pattern == _scores.UNMEASURED)
        return (WARNED if warned else "") + (UNMEASURED if unmeasured else "") + (SELF if self.self_judged else "")


def self_judged(run: RunData, model: str) -> bool:
    """Whether ``model`` was judged by itself in this run: the judge preset its plan names (plan.json,
    else spec.yaml's resolved models, else the scores rows' judge) is the model's own, or the score
    stage recorded a self-judging warning."""
    if any(w.pattern == SELF_JUDGING and w.judge_model == model for w in run.scores.judge_warnings):
        return True
    resolved = planned_models(run.path) or run.spec_doc.get(RESOLVED_MODELS)
    if isinstance(resolved, dict) and resolved.get(run.design.judge_role):
        return resolved[run.design.judge_role] == model
    return any(r.judge == model for r in run.scores.rows if r.model == model)


def planned_models(run_dir: Path) -> dict[str, str] | None:
    """Each role's preset as the run was planned (its plan.json: ``runtime.plan``), where it has one."""
    from localbench.runlog import RunPaths
    from localbench.runtime.plan import PlanError, RunPlan

    if not RunPaths(run_dir).plan_path.exists():
        return None
    try:
        return RunPlan.read(run_dir).resolved_models()
    except PlanError:
        return None


def load_entries(run_dirs: list[Path], extra_warnings: list[JudgeWarning] | None = None) -> dict[str, list[Entry]]:
    """Benchmark name -> its entries, labelled (see the module docstring). ``extra_warnings`` (a judge
    evaluation's verdicts) join the runs whose judge preset they name."""
    if not run_dirs:
        raise UserError("compare: no run directory given (and the study has no run yet)")
    by_bench: dict[str, list[Entry]] = defaultdict(list)
    seen: set[Path] = set()
    for d in run_dirs:
        if d.resolve() in seen:
            continue
        seen.add(d.resolve())
        run = load_run(d)
        for model in run.models():
            judges = {r.judge for r in run.scores.rows if r.model == model}
            warns = [w for w in run.scores.judge_warnings if w.judge_model in judges or not judges]
            warns += [w for w in extra_warnings or [] if w.judge_model in judges]
            by_bench[run.design.name].append(Entry(run, model, model, self_judged(run, model), warns))
    for entries in by_bench.values():
        for e in entries:
            clash = [o for o in entries if o is not e and o.model == e.model
                     and set(o.run.conditions()) & set(e.run.conditions())]
            if clash:
                e.label = f"{e.model} ({e.run.path.name})"  # the run's folder: a copied run keeps its id
    return dict(by_bench)


# -- merging runs -------------------------------------------------------------------------------

def merged(entries: list[Entry]) -> RunData:
    """One RunData holding every entry's rows and records under its label, and their comparisons."""
    first = entries[0].run
    rows, records = [], []
    for e in entries:
        rows += [r.model_copy(update={"model": e.label}) for r in e.run.scores.rows if r.model == e.model]
        records += [s.model_copy(update={"model": e.label}) for s in e.run.scenarios or [] if s.model == e.model]
    scores = Scores(run_id="compare", benchmark=first.design.name, bootstrap=first.scores.bootstrap, rows=rows)
    run = RunData(path=first.path, scores=scores, design=first.design, scenarios=records)
    seed = int((first.scores.bootstrap or {}).get("seed", 0))
    design, pooled = pooled_records(first.design, records)
    scores.comparisons = comparisons(pooled, design, seed) + comparisons(records, first.design, seed)
    return run


def headline_metric(design: Design) -> str:
    """The one number a benchmark is compared by: its headline metric where every category shares one
    that is pooled over categories, else the headline metrics pooled as a leak rate (``LEAK``)."""
    metrics = set(design.headline.values())
    if len(metrics) == 1 and next(iter(metrics)) in design.pooled_metrics:
        return next(iter(metrics))
    return LEAK


def pooled_records(design: Design, records: list[ScenarioScore]) -> tuple[Design, list[ScenarioScore]]:
    """The records as one category (ALL) holding the benchmark's headline metric (``headline_metric``),
    scenarios named with their category, and a design whose headline is that metric: what
    ``scoring.comparisons`` needs to compare the pooled headline."""
    metric = headline_metric(design)
    out = []
    for r in records:
        source = design.headline.get(r.category) if metric == LEAK else metric
        if source is None:
            continue
        v = r.metrics.get(source)
        if v is not None and metric == LEAK and design.higher_is_better(source):
            v = 1.0 - v
        out.append(r.model_copy(update={"category": ALL, "scenario": f"{r.category}/{r.scenario}",
                                        "metrics": {metric: v} if source in r.metrics else {},
                                        "failed": [metric] if source in r.failed else []}))
    extra = () if metric != LEAK else (Metric(LEAK, "headline metrics pooled as a leak rate"),)
    pooled_design = dataclasses.replace(design, headline={ALL: metric}, metrics=design.metrics + extra,
                                        paired_test=design.paired_test if metric != LEAK else "sign-flip")
    return pooled_design, out


def headline_estimate(entry: Entry, condition: str) -> Estimate:
    """The entry's pooled headline at ``condition``: scores.json's ALL row, or the pooled leak rate."""
    run, metric = entry.run, headline_metric(entry.run.design)
    if metric == LEAK:
        return pooled_leak(run, entry.model, condition, run.design.categories or run.categories())
    return Estimate.from_row(run.row(metric, entry.model, condition, ALL), run.design.higher_is_better(metric))


# -- tables ---------------------------------------------------------------------------------------

@dataclass
class CompareTable(Table):
    """A Table whose cells carry the marks of the entry behind them (``marks``: (row, column) -> text),
    and whose viewer links name the run (``runs``: row -> {label: run id} of the entries in it)."""

    marks: dict[tuple[int, int], str] = field(default_factory=dict)

    def cell_parts(self, i: int, j: int) -> tuple[str, bool, bool]:
        text, bold, dagger = super().cell_parts(i, j)
        mark = self.marks.get((i, j), "")
        return (text + mark if mark and text != "—" else text), bold, dagger

    @classmethod
    def of(cls, t: Table) -> "CompareTable":
        return cls(**{f.name: getattr(t, f.name) for f in dataclasses.fields(Table)})

    def mark_notes(self) -> None:
        used = "".join(self.marks.values())
        if WARNED in used:
            self.notes.append(f"{WARNED} computed from the labels of a judge with a warning (its answers looked "
                              "degenerate, or a judge evaluation found it no better than a cheater): read it as the "
                              "judge's output, not as a finding.")
        if UNMEASURED in used:
            self.notes.append(f"{UNMEASURED} computed from the labels of a judge no gold evaluation measured (the "
                              "run's judge_eval names none for it): how often its labels are wrong is unknown.")
        if SELF in used:
            self.notes.append(f"{SELF} self-judged: the run's judge is the agent's own model, so the model graded "
                              "its own transcripts.")


def linked(e: Estimate, entry: Entry) -> Estimate:
    """The cell's viewer filters naming the entry's own model and run (a label may add the run id)."""
    where = tuple((k, entry.model if k == "model" else v) for k, v in e.where if k != "judge")
    return dataclasses.replace(e, where=where + (("run", entry.run_id),)) if where else e


def headline_table(by_bench: dict[str, list[Entry]], fmt: CellFormat) -> CompareTable:
    """Models × benchmarks: each benchmark's pooled headline at each of its conditions, with its CI."""
    labels = list(dict.fromkeys(e.label for es in by_bench.values() for e in es))
    cols: list[tuple[Column, str, str]] = []
    for bench, es in by_bench.items():
        design = es[0].run.design
        metric = headline_metric(design)
        for cond in merged_conditions(es):
            hib = design.higher_is_better(metric) if metric != LEAK else False
            cols.append((Column(f"{design.title} {metric} · {cond}", metric, hib,
                                digits=design.metric(metric).decimals), bench, cond))
    t = CompareTable(name="headline", title="Headline metric by model and benchmark", label_headers=["Model"],
                     columns=[c for c, _, _ in cols], fmt=fmt, bold_best=True)
    for i, label in enumerate(labels):
        cells: list[Cell] = []
        for j, (col, bench, cond) in enumerate(cols):
            entry = entry_for(by_bench[bench], label, cond)
            if entry is None:
                cells.append(None)
                continue
            cells.append(linked(headline_estimate(entry, cond), entry))
            if entry.marks(col.metric):
                t.marks[(i, j)] = entry.marks(col.metric)
        t.rows.append(Row([label], cells))
    pooled = [f"{es[0].run.design.title}: {LEAK} = each category's headline metric "
              f"({', '.join(sorted({es[0].run.design.headline[c] for c in es[0].run.categories() if c in es[0].run.design.headline}))}) "
              "as a leak rate, pooled over scenarios"
              for es in by_bench.values() if headline_metric(es[0].run.design) == LEAK]
    t.notes.append("Cells: mean with its 95% interval (each benchmark's own: a Wilson interval for a proportion of "
                   "simulations, else a percentile bootstrap over scenarios, seeds averaged first); — = not run. "
                   "The best value of each column is in bold." + (f" {'; '.join(pooled)}." if pooled else ""))
    t.mark_notes()
    return t


def merged_conditions(entries: list[Entry]) -> list[str]:
    return entries[0].run.design.condition.order([c for e in entries for c in e.run.conditions()])


def entry_for(entries: list[Entry], label: str, condition: str | None = None) -> Entry | None:
    """The entry of this label (that ran ``condition``): runs of one model with other conditions share it."""
    return next((e for e in entries if e.label == label and (condition is None or condition in e.run.conditions())),
                None)


def _mark_rows(t: CompareTable, entries: list[Entry]) -> CompareTable:
    """Marks every cell of each row (labels: model[, judge], condition) from the entry behind it."""
    for i, row in enumerate(t.rows):
        entry = entry_for(entries, row.labels[0], row.labels[-1]) or entry_for(entries, row.labels[0])
        if entry is None:
            continue
        for j, col in enumerate(t.columns):
            if entry.marks(col.metric):
                t.marks[(i, j)] = entry.marks(col.metric)
            cell = row.cells[j]
            if isinstance(cell, Estimate):
                row.cells[j] = linked(cell, entry)
    t.mark_notes()
    return t


def metrics_table(run: RunData, entries: list[Entry], fmt: CellFormat) -> CompareTable:
    """One benchmark, models × its metrics pooled over every category, a row per model and condition."""
    from localbench.report.tables import ci_note, metric_column

    metrics = [m.name for m in run.design.metrics if any(r.metric == m.name and r.category == ALL and not r.group
                                                          for r in run.scores.rows)]
    t = CompareTable(name=f"{run.design.name}_metrics", title=f"{run.design.title}: every metric pooled over "
                     f"every {run.design.category.label.lower()}, by model and {run.design.condition.label.lower()}",
                     label_headers=["Model", run.design.condition.label],
                     columns=[metric_column(run, m) for m in metrics], fmt=fmt)
    for e in entries:
        if t.rows:
            t.breaks.add(len(t.rows))
        for cond in e.run.conditions():
            t.rows.append(Row([e.label, cond], [Estimate.from_row(run.row(m, e.label, cond, ALL),
                                                                  run.design.higher_is_better(m)) for m in metrics]))
    t.notes.append(ci_note(run, fmt, metrics))
    return _mark_rows(t, entries)


def ranks_table(run: RunData, entries: list[Entry], seed: int = 0) -> CompareTable:
    """One benchmark: each model's rank by the pooled headline at each condition (1 = best), with the
    percentile interval of its rank over bootstrap resamples of the scenarios every model ran."""
    design, pooled = pooled_records(run.design, run.scenarios or [])
    metric = design.headline[ALL]
    hib = design.higher_is_better(metric)
    conds = merged_conditions(entries)
    t = CompareTable(name=f"{run.design.name}_ranks", title=f"{run.design.title}: rank by {metric} (1 = best)",
                     label_headers=["Model"], columns=[Column(f"rank · {c}", metric, None, digits=0) for c in conds],
                     fmt="ci")
    ranks: dict[tuple[str, str], Estimate] = {}
    for cond in conds:
        per = {e.label: per_scenario([r for r in pooled if r.model == e.label and r.condition == cond], metric)[0]
               for e in entries}
        per = {k: v for k, v in per.items() if v}
        common = sorted(set.intersection(*(set(v) for v in per.values()))) if per else []
        if len(per) < 2 or not common:
            continue
        labels = list(per)
        cis = rank_intervals([[per[m][s] for m in labels] for s in common], higher_is_better=hib, seed=seed)
        for m, ci in zip(labels, cis):
            ranks[(m, cond)] = Estimate(ci.estimate, ci.low, ci.high, ci.n)
    labels = list(dict.fromkeys(e.label for e in entries))
    for label in labels:
        t.rows.append(Row([label], [ranks.get((label, c)) for c in conds]))
    t.notes.append("Rank 1 is the best mean; [low, high]: the 95% percentile interval of the rank over 1000 "
                   "bootstrap resamples of the scenarios every model ran (the same resample for all models, seeds "
                   "averaged first); ties share the better rank.")
    for i, label in enumerate(labels):
        for j, cond in enumerate(conds):
            e = entry_for(entries, label, cond)
            if e is not None and e.marks(metric):
                t.marks[(i, j)] = e.marks(metric)
    t.mark_notes()
    return t


def comparison_table(run: RunData, entries: list[Entry]) -> CompareTable | None:
    """One benchmark's paired comparisons (the run report's table over the merged runs, Holm across
    every pair), a Δ cell marked where either side carries a mark."""
    t = comparisons_table(run)
    if t is None:
        return None
    t = CompareTable.of(t)
    t.name, t.title = f"{run.design.name}_comparisons", f"{run.design.title}: paired differences (b − a)"
    for i, row in enumerate(t.rows):
        metric, fixed, pair = row.labels[0], row.labels[2], row.labels[3].split(" → ")
        sides = [entry_for(entries, x, fixed) for x in pair] + [entry_for(entries, fixed, x) for x in pair]
        mark = "".join(dict.fromkeys("".join(e.marks(metric) for e in sides if e is not None)))
        if mark:
            t.marks[(i, 0)] = mark
    t.notes.insert(0, f"Category {ALL}: the benchmark's headline pooled over every category (paired by category "
                      "and scenario); the others: each category's headline. Fixed: the condition two models are "
                      "compared at, or the model two conditions are compared for.")
    t.mark_notes()
    return t


def benchmark_tables(entries: list[Entry], fmt: CellFormat) -> tuple[RunData, list[CompareTable]]:
    """One benchmark's tables: metrics, per-category breakdown, ranks, paired comparisons."""
    run = merged(entries)
    cats = CompareTable.of(headline_by_condition_table(run, fmt, name=f"{run.design.name}_categories"))
    cats.title = f"{run.design.title}: each {run.design.category.label.lower()}'s headline metric by model"
    seed = int((run.scores.bootstrap or {}).get("seed", 0))
    tables = [metrics_table(run, entries, fmt), _mark_rows(cats, entries), ranks_table(run, entries, seed)]
    comp = comparison_table(run, entries)
    corr = corrected_table(entries, fmt)
    return run, tables + ([corr] if corr is not None else []) + ([comp] if comp is not None else [])


def corrected_table(entries: list[Entry], fmt: CellFormat) -> CompareTable | None:
    """One benchmark: each run's headline metric per category beside its Rogan–Gladen correction with
    the judge's measured error rates (scores.json's ``trust``), "not identified" or why there is none;
    the raw cell carries its entry's marks. None when no run has a trust section."""
    from localbench.report.trust import interval_text

    rows = [(e, m) for e in entries if e.run.scores.trust for m in e.run.scores.trust.metrics if m.model == e.model]
    if not rows:
        return None
    design = entries[0].run.design
    t = CompareTable(name=f"{design.name}_corrected", title=f"{design.title}: headline metrics corrected for their "
                     "judge's measured error rates", fmt=fmt,
                     label_headers=["Model", design.condition.label, design.category.label, "Metric"],
                     columns=[Column("Raw [95% CI]"), Column("Corrected [95% CI]"), Column("Judge")])
    for i, (e, m) in enumerate(rows):
        digits = design.metric(m.metric).decimals
        corrected = interval_text(m.corrected, digits) if m.corrected is not None else m.status
        t.rows.append(Row([e.label, m.condition, m.category, m.metric],
                          [interval_text(m.raw, digits), corrected, f"{m.judge} ({m.judge_model})"]))
        if e.marks(m.metric):
            t.marks[(i, 0)] = e.marks(m.metric)
    t.notes.append("Corrected: Rogan–Gladen on the category's leaked units with the judge's gold FPR and FNR "
                   "(the gold set's uncertainty carried); \"not identified\" where the interval says nothing either "
                   "way, \"unmeasured\" where no gold evaluation measured the judge, \"no correction\" where the "
                   "metric is not a share of judged units.")
    t.mark_notes()
    return t


def study_file_runs(path: Path) -> list[Path]:
    """A study's run directories (the study's own planner says which exist)."""
    from localbench.study.plan import study_run_dirs

    return [Path(p) for p in study_run_dirs(path)]


def is_study_file(path: Path) -> bool:
    """A YAML file given to compare is a study file (run directories are folders)."""
    if not (path.is_file() and path.suffix in (".yaml", ".yml")):
        return False
    doc = yaml.safe_load(path.read_text())
    return isinstance(doc, dict)
