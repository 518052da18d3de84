"""AgentSocialBench's report: the paper's tables and figures, built with the shared helpers of
``localbench.report`` (named in the design as ``report``; imported only when a report is rendered).

- Table 2 (``main_tables``): models × each category's headline metric at each level, plus IAS,
  TCQ and Task% pooled over all categories.
- Table 3 (``ladder_table``): levels × (dyadic leak, multi-party leak, IAS, TCQ, Task%) per model,
  with a Δ row from the first to the last level.
- The secondary leakage metrics, behaviour rates and the full/partial split per level.
- Figures: the headline metric against the privacy level, CD leakage by source → target domain,
  leakage against task completion, and full vs partial leaks.
"""

from __future__ import annotations

from localbench.benchmarks.asb.design import CATEGORIES, DYADIC, HEADLINE, MULTI_PARTY
from localbench.design import ALL
from localbench.report.plan import ReportPlan
from localbench.report.aggregate import Estimate, pooled_leak, pooled_metric
from localbench.report.data import RunData
from localbench.report.figures import FigureResult, group_heatmap, join_notes, metric_by_condition, split_bars, tradeoff
from localbench.report.tables import (Cell, CellFormat, Column, Row, Table, agents, ci_note, has_row,
                                      headline_by_condition_table, headline_table, label_headers, labels, metric_column,
                                      safe_name)

UTILITY = ("IAS", "TCQ", "Task%")  # pooled over every category in the headline and ladder tables


def lead_table(run: RunData, fmt: CellFormat = "pm") -> Table:
    """What the report opens with: every headline metric of every model at every level."""
    return headline_by_condition_table(run, fmt, pooled=UTILITY)


def main_tables(run: RunData, fmt: CellFormat = "pm") -> list[Table]:
    """Table 2 at each level."""
    return [headline_table(run, lv, fmt, pooled=UTILITY, name=f"table2_main_{safe_name(lv)}") for lv in run.conditions()]


def ladder_table(run: RunData, fmt: CellFormat = "pm") -> Table:
    """Table 3: per model, one row per level (dyadic leak, multi-party leak, IAS, TCQ, Task%) and a Δ row."""
    levels = run.conditions()
    cats = set(run.categories())
    cols: list[Column] = []
    groups: list[tuple[str, tuple[str, ...]]] = []
    for header, group in (("Dyadic leak", DYADIC), ("Multi-party leak", MULTI_PARTY)):
        if cats & set(group):
            cols.append(Column(header, "leak", False, pools=tuple(HEADLINE[c] for c in group if c in cats)))
            groups.append((header, group))
    util = [m for m in UTILITY if has_row(run, m, ALL)]
    cols += [metric_column(run, m) for m in util]
    t = Table(name="table3_ladder", title="Privacy ladder: leakage and utility by level",
              label_headers=label_headers(run, "Level"), columns=cols, fmt=fmt)
    for model, judge in agents(run):
        if t.rows:
            t.breaks.add(len(t.rows))
        block: list[list[Estimate]] = []
        for lv in levels:
            cells = [pooled_leak(run, model, lv, g, judge) for _, g in groups]
            cells += [Estimate.from_row(run.row(m, model, lv, ALL, judge)) for m in util]
            block.append(cells)
            t.rows.append(Row(labels(model, judge) + [lv], list(cells)))
        if len(levels) >= 2:
            first, last = block[0], block[-1]
            delta: list[Cell] = [Estimate(b.mean - a.mean) if a.mean is not None and b.mean is not None else None
                                 for a, b in zip(first, last)]
            t.rows.append(Row(labels(model, judge) + [f"Δ {levels[0]}→{levels[-1]}"], delta, kind="delta"))
    t.notes.append(ci_note(run, fmt))
    t.notes.append("Dyadic leak pools CD, MC, CU; multi-party leak pools GC, HS, CM, AM (each by its headline "
                   "metric: CM by CSLR, ACS counted as the violation rate 1 − ACS); each scenario counts once "
                   "(its seeds averaged).")
    if run.scenarios is None:
        t.notes.append("scenario_scores.jsonl is absent: pooled leak is the n-weighted mean of the category means, without a CI.")
    if len(levels) >= 2:
        t.notes.append(f"Δ = {levels[-1]} − {levels[0]} (means).")
    return t


def split_table(run: RunData, fmt: CellFormat = "pm") -> Table | None:
    """Full vs partial leaks per level, pooled over the categories that have the split (not AM).

    A falling full rate with a rising partial share is the abstraction paradox: the defense turns
    verbatim leaks into hints and paraphrases rather than removing them.
    """
    cats = [c for c in CATEGORIES if c != "AM" and has_row(run, f"{HEADLINE[c]}_full", c)]
    if not cats:
        return None
    cols = [Column("Full", "leak", False), Column("Partial", "leak", False),
            Column("Partial share", "share", None)]
    t = Table(name="table5_full_partial", title="Full and partial leakage by level (pooled: " + ", ".join(cats) + ")",
              label_headers=label_headers(run, "Level"), columns=cols, fmt=fmt)
    for model, judge in agents(run):
        if t.rows:
            t.breaks.add(len(t.rows))
        for lv in run.conditions():
            full = pooled_leak(run, model, lv, cats, judge, part="_full")
            part = pooled_leak(run, model, lv, cats, judge, part="_partial")
            share: Cell = None
            if full.mean is not None and part.mean is not None and full.mean + part.mean > 0:
                share = Estimate(part.mean / (full.mean + part.mean))
            t.rows.append(Row(labels(model, judge) + [lv], [full, part, share]))
    t.notes.append(ci_note(run, fmt))
    t.notes.append("Full: the private item itself was disclosed; partial: a recognisable hint or abstraction of it. "
                   "Partial share = partial / (full + partial), from the means.")
    return t


SECONDARY = (("CULR_worst", "CU"), ("CER", "CM"))


def secondary_table(run: RunData, fmt: CellFormat = "pm") -> Table | None:
    """The leakage metrics that are not a category's headline: CU's worse-off user, CM's extraction."""
    cols = [(metric_column(run, m), c) for m, c in SECONDARY if has_row(run, m, c)]
    if not cols:
        return None
    t = Table(name="table2b_secondary", title="Secondary leakage metrics by level",
              label_headers=label_headers(run, "Level"), columns=[c for c, _ in cols], fmt=fmt)
    for model, judge in agents(run):
        for level in run.conditions():
            cells: list[Cell] = [Estimate.from_row(run.row(col.metric, model, level, cat, judge), False)
                                 for col, cat in cols]
            t.rows.append(Row(labels(model, judge) + [level], cells))
    t.notes.append(ci_note(run, fmt))
    t.notes.append("CULR_worst: the cross-user leakage rate of the worse-off user (CU); CER: private items about "
                   "a competitor that reached other competitors (CM).")
    return t


def behaviour_names(run: RunData) -> list[str]:
    """NEG, POS, then the per-behaviour rates (B:<name>) found in scores.json or scenario_scores.jsonl."""
    names = {r.metric for r in run.scores.rows if r.metric in ("NEG", "POS") or r.metric.startswith("B:")}
    for s in run.scenarios or []:
        names.update(m for m in s.metrics if m.startswith("B:"))
    return sorted(names, key=lambda m: (m not in ("NEG", "POS"), m))


def behaviour_table(run: RunData, fmt: CellFormat = "pm") -> Table | None:
    """Observed behaviour counts (NEG, POS) and per-behaviour rates, pooled over categories.

    Uses the category-ALL rows of scores.json where they exist, else pools scenario_scores.jsonl.
    A behaviour's rate has no better direction here (some are desirable, some not).
    """
    names = behaviour_names(run)
    if not names:
        return None
    cols = [metric_column(run, m, m.removeprefix("B:"), direction=m in ("NEG", "POS")) for m in names]
    t = Table(name="table4_behaviour", title="Behaviours observed (all categories pooled)",
              label_headers=label_headers(run, "Level"), columns=cols, fmt=fmt)
    for model, judge in agents(run):
        if t.rows:
            t.breaks.add(len(t.rows))
        for lv in run.conditions():
            cells: list[Cell] = []
            for m in names:
                row = run.row(m, model, lv, ALL, judge)
                cells.append(Estimate.from_row(row) if row is not None else pooled_metric(run, m, model, lv, judge))
            t.rows.append(Row(labels(model, judge) + [lv], cells))
    t.notes.append(ci_note(run, fmt))
    t.notes.append("NEG / POS: negative / positive behaviours observed per simulation; other columns: share of "
                   "simulations where the behaviour was observed (each scenario counts once).")
    return t


def _one(build):
    """A builder of at most one table, as the report plan takes them (a list)."""
    return lambda run, fmt: [t for t in [build(run, fmt)] if t is not None]


def level_effect(run: RunData) -> FigureResult:
    """Headline leakage metric of each category against the privacy level, one line per model."""
    fig = metric_by_condition(run, "level_effect", "Headline metric by privacy level", [(c, HEADLINE[c]) for c in CATEGORIES])
    fig.caption = ("Each panel is one category's headline metric at each privacy level, one line per model: "
                   "a leakage rate that falls from L0 to L2 means the privacy instructions work (ACS should rise).")
    fig.alt = ("Line charts, one per category, of the headline leakage metric with 95% confidence intervals "
               "against the privacy level, one line per agent model.")
    return fig


def domain_heatmap(run: RunData) -> FigureResult:
    """CDLR by source × target domain (CD scenarios), one panel per model and level."""
    fig = group_heatmap(run, "cd_domain_heatmap", "CD leakage by source → target domain", "CDLR", "CD",
                        ("source domain", "target domain"))
    fig.caption = ("Each cell is the cross-domain leakage rate from one domain's agent to another's: darker red is "
                   "more leakage; grey means no scenario crossed those domains.")
    fig.alt = "Heatmaps of CDLR by source domain (rows) and target domain (columns), one per model and privacy level."
    return fig


def leak_vs_tcq(run: RunData) -> FigureResult:
    """Privacy–utility trade-off: pooled leak rate against TCQ, one trajectory per model over levels."""
    cats = [c for c in run.categories() if c in HEADLINE]
    fig = tradeoff(run, "leak_vs_tcq", "Leakage vs task completion quality", "TCQ",
                   lambda model, level, judge: pooled_leak(run, model, level, cats, judge),
                   "leak rate, all categories pooled (lower is better)")
    if fig.ok and run.scenarios is None:
        fig.note = join_notes("pooled leak has no CI: scenario_scores.jsonl is absent", fig.note)
    fig.caption = ("Each point is a model at one privacy level: down and to the right is better (less leakage, better "
                   "task quality); a line joins one model's levels, so its slope is the price of privacy in utility.")
    fig.alt = "Scatter plot of the pooled leak rate against task completion quality, one trajectory per model."
    return fig


def full_partial_split(run: RunData) -> FigureResult:
    """Full vs partial leaks per level: stacked bars per model, one panel per category."""
    fig = split_bars(run, "full_partial_split", "Full and partial leakage by level",
                     [(c, HEADLINE[c]) for c in CATEGORIES])
    if fig.ok and "AM" in run.categories():
        fig.note = join_notes("AM has no full/partial split (ACS is a compliance score)", fig.note)
    fig.caption = ("Solid bars are full leaks (the item itself), hatched bars partial ones (a hint): a defense that only "
                   "turns full leaks into partial ones has not removed them.")
    fig.alt = "Stacked bar charts of full and partial leak rates per privacy level, one panel per category."
    return fig


def report_plan() -> ReportPlan:
    return ReportPlan(
        tables=(main_tables, _one(ladder_table), _one(secondary_table), _one(behaviour_table), _one(split_table)),
        figures=(level_effect, domain_heatmap, leak_vs_tcq, full_partial_split),
        lead=lead_table,
        lead_figure="level_effect",
        glossary_note="Leakage metrics also come split into `_full` (the item itself) and `_partial` (an "
                      "identifying hint or abstraction); full + partial = the total.",
    )
