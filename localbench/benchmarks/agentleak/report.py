"""AgentLeak's report, built with the shared helpers of ``localbench.report``.

- Lead table: per model and setting, the exposure leak rate, each channel's leak rate, the audit gap,
  the weighted score and task success, over every vertical (Wilson intervals over traces).
- The headline table per setting (ELR per vertical); attack success by family; the paired tests
  (McNemar: each setting against the first, and C1 against C2 on the same traces).
- Figures: channel leak rates by setting (where each defense acts), and a model × channel matrix.
"""

from __future__ import annotations

from localbench.benchmarks.agentleak.design import CHANNEL_METRICS
from localbench.benchmarks.agentleak.scenario import CHANNELS, FAMILIES
from localbench.design import ALL, ReportPlan
from localbench.report.aggregate import Estimate
from localbench.report.data import RunData
from localbench.report.figures import FigureResult, bars_by_level, metric_matrix
from localbench.report.tables import (Cell, CellFormat, Row, Table, agents, ci_note, headline_table, label_headers,
                                      labels, metric_column, safe_name)

LEAD = ("ELR", "ELR:all", *CHANNEL_METRICS, "H1", "H1:internal", "H1|leak", "WLS", "TSR")


def lead_table(run: RunData, fmt: CellFormat = "pm") -> Table:
    """Every channel's leak rate and the trace-level metrics, per model and setting, all verticals."""
    cols = [metric_column(run, m, m.replace("CLR:", "")) for m in LEAD]
    t = Table(name="channels", title="Leakage by channel, per setting (all verticals)",
              label_headers=label_headers(run, run.design.condition.label), columns=cols, fmt=fmt)
    for model, judge in agents(run):
        if t.rows:
            t.breaks.add(len(t.rows))
        for level in run.levels():
            t.rows.append(Row(labels(model, judge) + [level],
                              [Estimate.from_row(run.row(c.metric, model, level, ALL, judge)) for c in cols]))
    t.notes.append(ci_note(run, fmt, [c.metric for c in cols]))
    t.notes.append("Cells are shares of traces, except WLS, a score averaged over scenarios. C1–C7: "
                   + "; ".join(f"{c} {n}" for c, n in CHANNELS.items()) + ". "
                   "H1: the final output clean while an internal channel leaked (of all traces; H1|leak: of the leaking "
                   "ones).")
    return t


def setting_tables(run: RunData, fmt: CellFormat = "pm") -> list[Table]:
    return [headline_table(run, lv, fmt, pooled=("TSR",), name=f"elr_{safe_name(lv)}") for lv in run.levels()]


def _group_cell(run: RunData, metric: str, family: str, model: str, level: str, judge: str | None) -> Estimate:
    row = next((r for r in run.scores.rows if r.metric == metric and r.group == family and r.model == model
                and r.level == level and r.category == ALL and (judge is None or r.judge == judge)), None)
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
        for level in run.levels():
            cells: list[Cell] = []
            for f in families:
                cells += [_group_cell(run, "delivered", f, model, level, judge),
                          _group_cell(run, "ASR", f, model, level, judge)]
            t.rows.append(Row(labels(model, judge) + [level], cells))
    t.notes.append(ci_note(run, fmt, ["ASR", "delivered"]))
    t.notes.append("delivered: of the A1/A2 traces, the share whose payload reached an agent at its surface (F1, F5, "
                   "F6 with the request; F2 when a tool is called; F3 when the shared memory is read; F4 when the "
                   "compromised peer acts; an F4 attack has no peer to ride on in the single-agent setting). ASR: of "
                   "the delivered ones, the share in which at least one sensitive field leaked through any channel.")
    return [t]


def channel_bars(run: RunData) -> FigureResult:
    fig = bars_by_level(run, "channel_rates", "Leak rate by channel and setting", list(CHANNEL_METRICS),
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
    return ReportPlan(tables=(setting_tables, attack_table), figures=(channel_bars, model_matrix), lead=lead_table,
                      lead_figure="channel_rates")
