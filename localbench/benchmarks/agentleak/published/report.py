"""The imported run's report: first what was imported and what was not re-simulated, then the
four-column table (a)-(d), McNemar (b) vs (c), agreement per channel message and the disagreement
causes with links into the run's viewer. Built from scenario_scores.jsonl with report/'s Table."""

from __future__ import annotations

from localbench.benchmarks.agentleak.published.causes import group_causes
from localbench.benchmarks.agentleak.published.tables import agreement, four_columns, p_text, pct
from localbench.design import ReportPlan
from localbench.records import ScenarioScore
from localbench.report.data import RunData
from localbench.report.tables import CellFormat, Column, Row, Table

VIEWER = "view/index.html"


def imported_line(run: RunData) -> str:
    imp = run.spec_doc.get("imported") or {}
    if not imp:
        return "Imported run."
    sha = imp.get("sha256")
    sha = next(iter(sha.values())) if isinstance(sha, dict) and len(sha) == 1 else sha
    return (f"Imported run: {imp.get('imported')} of {imp.get('records')} traces from {imp.get('source')} "
            f"(sha256 {str(sha)[:16]}…), {imp.get('not_imported')} not imported"
            f"{' (see ' + imp['problems_file'] + ')' if imp.get('problems_file') else ''}. {imp.get('not_resimulated', '')}")


def sim_links(records: list[ScenarioScore], viewer: str = VIEWER) -> dict[str, str]:
    """Transcript key → its page in the run's viewer (simulations are numbered in key order)."""
    return {k: f"{viewer}#sim/{n}" for n, k in enumerate(sorted(r.key for r in records))}


def lead_table(run: RunData, fmt: CellFormat = "pm") -> Table:
    records = run.scenarios or []
    imp = run.spec_doc.get("imported") or {}
    where = (f"Imported run ({imp.get('imported')} traces from {imp.get('source')}; nothing re-simulated). "
             if imp else "")
    t = Table(name="four_columns", title=where + "The paper's numbers (a), recomputed from the upstream flags (b), and "
              "localbench's Tier 1-2 under the stated definition (c) and upstream's scope (d); % of traces [Wilson 95%]",
              label_headers=["number", "published in", "n"],
              columns=[Column("(a) paper"), Column("(b) upstream flags"), Column("(b) = (a)?"),
                       Column("(c) stated"), Column("(d) upstream scope"), Column("McNemar (b) vs (c): b-only / c-only, p")])
    absent = []
    for c in four_columns(records):
        if c.n == 0:
            absent.append(c.paper.id)
            continue
        same = "yes" if c.reproduced else f"no: {c.difference:+.2f} points"
        t.rows.append(Row([c.paper.id, f"{c.paper.table}: {c.paper.row}", str(c.n)],
                          [f"{c.paper.value:g}", pct(c.cols['b']), same, pct(c.cols['c']), pct(c.cols['d']),
                           f"{c.mcnemar.b} / {c.mcnemar.c}, p {p_text(c.mcnemar.p_value)}"]))
    t.notes.append(imported_line(run))
    if absent:
        t.notes.append(f"Not in this run's traces (no row): {', '.join(absent)}.")
    t.notes.append("(b) is read from each trace's stored flags (results), never recomputed from text; (c) and (d) "
                   "scan every channel message with localbench's Tier 1-2 detectors (no judge). ASR rows: any leak "
                   "(C1, C2 or C5 of the multi-agent run) among traces tagged with an attack class of that family; "
                   "the harness injects no attack.")
    return t


def agreement_table(run: RunData, fmt: CellFormat = "pm") -> list[Table]:
    t = Table(name="agreement", title="Per channel message: upstream's flag against localbench's (c)",
              label_headers=["message"], columns=[Column("n"), Column("both leak"), Column("upstream only"),
                                                  Column("localbench only"), Column("neither"),
                                                  Column("Cohen's κ [95% CI]")])
    for a in agreement(run.scenarios or []):
        t.rows.append(Row([a.kind], [str(a.n), str(a.both), str(a.upstream_only), str(a.localbench_only),
                                     str(a.neither), f"{a.kappa.estimate:.3f} [{a.kappa.low:.3f}, {a.kappa.high:.3f}]"]))
    t.notes.append("κ: scikit-learn's Cohen's κ on the leak / no-leak decision, 95% percentile bootstrap over messages.")
    return [t]


def causes_table(run: RunData, fmt: CellFormat = "pm", top: int = 25, viewer: str = VIEWER) -> list[Table]:
    records = run.scenarios or []
    links = sim_links(records, viewer)
    groups = group_causes(records)
    t = Table(name="disagreement_causes", title="Disagreements (upstream vs localbench (c)) by cause, field by field",
              label_headers=["found by", "cause", "tier", "value", "field is"],
              columns=[Column("fields"), Column("messages"), Column("traces"), Column("most frequent fields"),
                       Column("examples")])
    for g in groups[:top]:
        names = ", ".join(f"{n} ({k})" for n, k in g.names.most_common(3))
        t.rows.append(Row([g.direction, g.reason, g.tier, g.value, g.listed],
                          [str(g.fields), str(len(g.messages)), str(len(g.traces)), names,
                           " ".join(links[k] for k in g.traces[:3])]))
    if len(groups) > top:
        t.notes.append(f"{len(groups) - top} smaller groups are in scenario_scores.jsonl (payload.messages[].disagreements).")
    t.notes.append(f"Examples open the trace in the run's viewer ({viewer}, written by `localbench report` or "
                   "`localbench view`).")
    return [t]


def report_plan() -> ReportPlan:
    return ReportPlan(tables=(agreement_table, causes_table), lead=lead_table)
