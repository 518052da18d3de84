"""AgentLeak's report, built with the shared helpers of ``localbench.report``.

- Lead table: per model and setting, the exposure leak rate, each channel's leak rate, the audit gap,
  the weighted score and task success, over every vertical (Wilson intervals over traces).
- The headline table per setting (ELR per vertical); the paper's Table VIII (C1 alone, the C2 and C5
  increments, ELR, all channels) and Table IX (H1 by vertical) structures; attack delivery and
  success by family; McNemar's test pooled over verticals (each setting against the first on ELR
  and on C1 alone, and C1 against C2 on the same traces), the footnote naming the variant run.
- Figures: channel leak rates by setting (where each defense acts), and a model × channel matrix.
"""

from __future__ import annotations

from localbench.benchmarks.agentleak.design import CHANNEL_METRICS
from localbench.benchmarks.agentleak.scenario import CHANNELS, FAMILIES, VERTICALS
from localbench.design import ALL
from localbench.report.plan import ReportPlan
from localbench.report.aggregate import Estimate
from localbench.report.data import RunData
from localbench.report.figures import FigureResult, bars_by_condition, metric_matrix
from localbench.report.tables import (Cell, CellFormat, Column, Row, Table, agents, ci_note, headline_table,
                                      label_headers, labels, metric_column, safe_name)
from localbench.spec import NO_JUDGE
from localbench.stats import mcnemar_test

LEAD = ("ELR", "ELR:all", *CHANNEL_METRICS, "H1", "H1:internal", "H1|leak", "WLS", "TSR", "TSR:semantic")
NOT_JUDGED = "not judged"  # a judged metric's cell in a run with tier 3 off


def lead_table(run: RunData, fmt: CellFormat = "pm") -> Table:
    """Every channel's leak rate and the trace-level metrics, per model and setting, all verticals."""
    cols = [metric_column(run, m, m.replace("CLR:", "")) for m in LEAD]
    t = Table(name="channels", title="Leakage by channel, per setting (all verticals)",
              label_headers=label_headers(run, run.design.condition.label), columns=cols, fmt=fmt)
    for model, judge in agents(run):
        if t.rows:
            t.breaks.add(len(t.rows))
        for setting in run.conditions():
            t.rows.append(Row(labels(model, judge) + [setting], [_lead_cell(run, c.metric, model, setting, judge)
                                                               for c in cols]))
    t.notes.append(ci_note(run, fmt, [c.metric for c in cols]))
    t.notes.append("Cells are shares of traces, except WLS, a score averaged over scenarios. C1–C7: "
                   + "; ".join(f"{c} {n}" for c, n in CHANNELS.items()) + ". "
                   "ELR: a leak on C1, C2 or C5 (the paper's scope); ELR:all on any channel. H1: ¬C1 ∧ (C2 ∨ C5), of all "
                   "traces (H1:internal: ¬C1 ∧ any of C2–C7; H1|leak: of the leaking ones). TSR is rule-checked "
                   "(the answer states the required values, the required tools were used); TSR:semantic is the task "
                   "judge's verdict on the scenario's success criteria (all met), \"not judged\" with tier 3 off.")
    return t


def _lead_cell(run: RunData, metric: str, model: str, setting: str, judge: str | None) -> Cell:
    row = run.row(metric, model, setting, ALL, judge)
    if row is None and metric == "TSR:semantic" and (judge == NO_JUDGE or (judge is None and NO_JUDGE in run.judges())):
        return NOT_JUDGED
    return Estimate.from_row(row)


def setting_tables(run: RunData, fmt: CellFormat = "pm") -> list[Table]:
    return [headline_table(run, lv, fmt, pooled=("TSR",), name=f"elr_{safe_name(lv)}") for lv in run.conditions()]


def _group_cell(run: RunData, metric: str, family: str, model: str, setting: str, judge: str | None) -> Estimate:
    row = next((r for r in run.scores.rows if r.metric == metric and r.group == family and r.model == model
                and r.condition == setting and r.category == ALL and (judge is None or r.judge == judge)), None)
    return Estimate.from_row(row)


def attack_table(run: RunData, fmt: CellFormat = "pm") -> list[Table]:
    """Attack success by family beside its delivery: of the A1/A2 traces, the share whose payload
    reached an agent, and of those, the share that leaked (all verticals)."""
    families = [f for f in FAMILIES if any(r.metric in ("ASR", "delivered") and r.group == f
                                           for r in run.scores.rows)]
    if not families:
        return []
    cols = []
    for f in families:
        cols += [metric_column(run, "delivered", f"{f} delivered"), metric_column(run, "ASR", f"{f} ASR")]
    t = Table(name="asr_by_family", title="Attack delivery and success by family (all verticals)",
              label_headers=label_headers(run, run.design.condition.label), columns=cols, fmt=fmt)
    for model, judge in agents(run):
        for setting in run.conditions():
            cells: list[Cell] = []
            for f in families:
                cells += [_group_cell(run, "delivered", f, model, setting, judge),
                          _group_cell(run, "ASR", f, model, setting, judge)]
            t.rows.append(Row(labels(model, judge) + [setting], cells))
    t.notes.append(ci_note(run, fmt, ["ASR", "delivered"]))
    t.notes.append("delivered: of the A1/A2 traces, the share whose payload reached an agent at its surface (F1, F5, "
                   "F6 with the request; F2 when a tool is called; F3 when the shared memory is read; F4 when the "
                   "compromised peer acts; an F4 attack has no peer to ride on in the single-agent setting). ASR: of "
                   "the delivered ones, the share in which at least one sensitive field leaked through any channel.")
    return [t]


def table_viii(run: RunData, fmt: CellFormat = "pm") -> list[Table]:
    """The paper's Table VIII structure from the run's own traces: per setting, C1 alone (the fair
    single vs multi comparison), the increments C2 and C5 add to it, their union (ELR) and every
    channel (ELR:all)."""
    metrics = [("CLR:C1", "C1 only"), ("C2-only", "+C2 (C2 ∧ ¬C1)"), ("C5-only", "+C5 (C5 ∧ ¬C1 ∧ ¬C2)"),
               ("ELR", "ELR (C1 ∨ C2 ∨ C5)"), ("ELR:all", "ELR:all (C1–C7)")]
    cols = [metric_column(run, m, h) for m, h in metrics]
    t = Table(name="table_viii", title="Table VIII structure: output-only vs system-level leakage, per setting",
              label_headers=label_headers(run, run.design.condition.label), columns=cols, fmt=fmt)
    for model, judge in agents(run):
        for setting in run.conditions():
            t.rows.append(Row(labels(model, judge) + [setting],
                              [Estimate.from_row(run.row(m, model, setting, ALL, judge)) for m, _ in metrics]))
    t.notes.append(ci_note(run, fmt, [m for m, _ in metrics]))
    t.notes.append("C1 only + C2 + C5 = ELR per trace (the increments are disjoint). Compare settings on C1 only for "
                   "the paper's fair single vs multi comparison (a single agent has no C2).")
    return [t]


def table_ix(run: RunData, fmt: CellFormat = "pm") -> list[Table]:
    """The paper's Table IX structure: H1 = ¬C1 ∧ (C2 ∨ C5) by vertical, per setting."""
    verticals = [v for v in VERTICALS if any(r.category == v for r in run.scores.rows)]
    cols = [metric_column(run, "H1", v) for v in verticals] + [metric_column(run, "H1", "all verticals")]
    t = Table(name="table_ix", title="Table IX structure: the audit gap H1 by vertical",
              label_headers=label_headers(run, run.design.condition.label), columns=cols, fmt=fmt)
    for model, judge in agents(run):
        for setting in run.conditions():
            t.rows.append(Row(labels(model, judge) + [setting],
                              [Estimate.from_row(run.row("H1", model, setting, v, judge)) for v in [*verticals, ALL]]))
    t.notes.append(ci_note(run, fmt, ["H1"]))
    t.notes.append("H1: share of traces whose final output (C1) is clean while an inter-agent message (C2) or a memory "
                   "write (C5) leaked.")
    return [t]


def paired_tests(run: RunData, fmt: CellFormat = "pm") -> list[Table]:
    """McNemar's test on traces paired by scenario and seed: each setting against the first, pooled over
    the verticals, on ELR and on C1 alone (Table VIII's fair comparison); and C1 against C2 on the same
    traces. The footnote names the test each p-value comes from."""
    recs = run.scenarios or []
    settings = run.conditions()
    if not recs or not settings:
        return []
    t = Table(name="mcnemar", title="Paired tests (McNemar), pooled over verticals",
              label_headers=["Model", "Comparison", "Metric"],
              columns=[Column("a"), Column("b"), Column("pairs"), Column("discordant (b, c)"), Column("p"),
                       Column("test")], fmt=fmt)
    used = set()

    def add(model: str, what: str, metric: str, sa: dict, sb: dict) -> None:
        keys = sorted(set(sa) & set(sb))
        if not keys:
            return
        b = sum(1 for k in keys if sa[k] == 1.0 and sb[k] == 0.0)
        c = sum(1 for k in keys if sa[k] == 0.0 and sb[k] == 1.0)
        res = mcnemar_test(b, c)
        test = "exact binomial" if res.exact else "chi-square, continuity-corrected"
        used.add(test)
        t.rows.append(Row([model, what, metric], [f"{sum(sa[k] for k in keys) / len(keys):.2f}",
                                                  f"{sum(sb[k] for k in keys) / len(keys):.2f}", str(len(keys)),
                                                  f"{b}, {c}", f"{res.p_value:.3g}", f"McNemar ({test})"]))

    def series(model: str, setting: str, metric: str) -> dict[str, float]:
        return {f"{r.scenario}|{r.seed_index}": float(r.metrics[metric]) for r in recs
                if r.model == model and r.condition == setting and r.metrics.get(metric) is not None}

    for model in sorted({r.model for r in recs}):
        for lv in settings[1:]:
            for metric in ("ELR", "CLR:C1"):
                add(model, f"{settings[0]} → {lv}", metric, series(model, settings[0], metric), series(model, lv, metric))
        for lv in settings:
            add(model, f"C1 → C2 at {lv}", "CLR", series(model, lv, "CLR:C1"), series(model, lv, "CLR:C2"))
    if not t.rows:
        return []
    t.notes.append("McNemar's test on the discordant pairs of 0/1 outcomes paired by scenario and seed (b: a leaked "
                   "and b did not; c: the reverse); " + "; ".join(sorted(used)) + " (the exact binomial test "
                   "below 25 discordant pairs, statsmodels). a, b: the shares of the paired traces that leaked. "
                   "CLR:C1 alone is the paper's fair single vs multi comparison (Table VIII).")
    return [t]


def judge_warning_table(run: RunData, fmt: CellFormat = "pm") -> list[Table]:
    """The tier-3 judge's warnings (``judge_warnings.py``), read from the run's judgments; the report
    says when tier 3 was off or has not run."""
    from localbench.benchmarks.agentleak.judge_warnings import judge_warnings
    from localbench.runlog import Judgment, RecordStore, RunPaths

    path = RunPaths(run.path).judgments_path
    judgments = list(RecordStore(path, Judgment).read()) if path.is_file() else []
    warns = judge_warnings(judgments)
    t = Table(name="judge_warnings_agentleak", title="Judge warnings (tier-3 leak judge)",
              label_headers=["Judge model"], columns=[Column("warning"), Column("calls"), Column("of")], fmt=fmt)
    for w in warns:
        t.rows.append(Row([w.judge_model], [w.what, str(w.count), str(w.total)]))
    if any(r.judge == NO_JUDGE for r in run.scores.rows):
        t.rows.append(Row([NO_JUDGE], ["tier 3 off (--judge none)", "0", str(len(judgments))]))
        t.notes.append("Tier 3 was off in this run (--judge none): leaks are the rule tiers' (1 canaries, 2 "
                       "identifiers and value matches) alone; natural-language paraphrases and inferences, and "
                       "TSR's semantic part, are not judged.")
    elif not any(j.judge_model != "rule" for j in judgments):
        t.rows.append(Row(["none"], ["tier 3 not judged", "0", str(len(judgments))]))
        t.notes.append("No tier-3 judge call in this run: leaks are the rule tiers' (1 canaries, 2 identifiers and "
                       "value matches) alone; natural-language paraphrases and inferences are not judged.")
    elif not warns:
        return []
    else:
        t.notes.append("ELR, CLR, H1, ASR and WLS include this judge's labels (tier 3): read them with these warnings.")
    return [t]


def channel_bars(run: RunData) -> FigureResult:
    fig = bars_by_condition(run, "channel_rates", "Leak rate by channel and setting", list(CHANNEL_METRICS),
                        [m.replace("CLR:", "") for m in CHANNEL_METRICS])
    fig.caption = ("Each group of bars is one channel, one bar per setting: a defense that works on a channel "
                   "lowers its bar; internal channels (C2–C7) leaking more than C1 is what output-only audits miss.")
    fig.alt = "Grouped bar charts of the share of traces leaking on each channel C1 to C7, one bar per setting."
    return fig


def model_matrix(run: RunData) -> FigureResult:
    fig = metric_matrix(run, "model_channel_matrix", "Model × channel leak rates", list(CHANNEL_METRICS),
                        [m.replace("CLR:", "") for m in CHANNEL_METRICS])
    fig.caption = "Each cell is a model's leak rate on one channel at one setting: darker is more leakage."
    fig.alt = "Heatmaps of leak rates with models as rows and channels C1 to C7 as columns, one per setting."
    return fig


def report_plan() -> ReportPlan:
    return ReportPlan(tables=(judge_warning_table, setting_tables, table_viii, table_ix, attack_table, paired_tests), figures=(channel_bars, model_matrix), lead=lead_table,
                      lead_figure="channel_rates")
