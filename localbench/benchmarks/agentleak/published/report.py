"""The imported run's report: first what was imported and what was not re-simulated, then the
table of columns (a)-(f) with McNemar of (c), (e), (f) against (b), the failed upstream runs per
model, the numbers without the traces whose request names a person absent from the vault, agreement
per channel message and the disagreement causes with links into the run's viewer. Built from
scenario_scores.jsonl with report/'s Table."""

from __future__ import annotations

from localbench.benchmarks.agentleak.published.causes import group_causes
from localbench.benchmarks.agentleak.published.tables import (
    AGAINST_B,
    agreement,
    failed_runs,
    four_columns,
    mcnemar_cell,
    names_absent_person,
    pct,
)
from localbench.report.plan import ReportPlan
from localbench.runlog import RunFiles, ScenarioScore
from localbench.report.data import RunData
from localbench.report.tables import CellFormat, Column, Row, Table

VIEWER = RunFiles.VIEWER
ABSENT_QUANTITIES = ("C1", "C2", "C5", "H1")  # the numbers the absent-person table restates


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
    imp = run.spec_doc.get("imported") or {}
    where = (f"Imported run ({imp.get('imported')} traces from {imp.get('source')}; nothing re-simulated). "
             if imp else "")
    t = columns_table(run.scenarios or [], "four_columns", where + "The paper's numbers (a), recomputed from the "
                      "upstream flags (b), and localbench's Tier 1-2 under the stated definition (c), upstream's scope "
                      "(d), the declared forbidden fields only (e) and without the failed upstream runs (f); "
                      "% of traces [Wilson 95%]")
    t.notes.insert(0, imported_line(run))
    return t


def columns_table(records: list[ScenarioScore], name: str, title: str, keep=lambda pv: True,
                  same_traces: bool = True) -> Table:
    """Every published number ``keep`` accepts under columns (a)-(f), McNemar of (c), (e), (f) against (b);
    ``same_traces`` False (a subset of the paper's traces) leaves out whether (b) reproduces (a)."""
    t = Table(name=name, title=title, label_headers=["number", "published in", "n"],
              columns=[Column("(a) paper"), Column("(b) upstream flags"), *([Column("(b) = (a)?")] if same_traces else []),
                       Column("(c) stated"), Column("(d) upstream scope"), Column("(e) declared forbidden"),
                       Column("(f) n"), Column("(f) failed runs left out"),
                       *[Column(f"McNemar (b) vs ({d}): b-only / {d}-only, p") for d in AGAINST_B]])
    absent = []
    for c in four_columns(records):
        if not keep(c.paper):
            continue
        if c.n == 0:
            absent.append(c.paper.id)
            continue
        same = "yes" if c.reproduced else f"no: {c.difference:+.2f} points"
        t.rows.append(Row([c.paper.id, f"{c.paper.table}: {c.paper.row}", str(c.n)],
                          [f"{c.paper.value:g}", pct(c.cols['b']), *([same] if same_traces else []), pct(c.cols['c']),
                           pct(c.cols['d']),
                           pct(c.cols['e']), str(c.cols['f'].n), pct(c.cols['f']),
                           *[mcnemar_cell(c.vs_b[d]) for d in AGAINST_B]]))
    if absent:
        t.notes.append(f"Not in these traces (no row): {', '.join(absent)}.")
    t.notes.append("(b) is read from each trace's stored flags (results), never recomputed from text; (c)-(f) "
                   "scan every channel message with localbench's Tier 1-2 detectors (no judge). (e) counts only the "
                   "fields the trace lists in allowed_set.forbidden_fields (a *_real field when its base field is "
                   "listed). (f) is (c) over the (f) n traces with at least one upstream LLM call that answered. "
                   "McNemar pairs each column with (b) on the traces both score. ASR rows: any leak "
                   "(C1, C2 or C5 of the multi-agent run) among traces tagged with an attack class of that family; "
                   "the harness injects no attack.")
    return t


def failed_table(run: RunData, fmt: CellFormat = "pm", viewer: str = VIEWER) -> list[Table]:
    """Per model, the traces whose every upstream call failed: what (f) leaves out, and why upstream failed."""
    records = run.scenarios or []
    links = sim_links(records, viewer)
    t = Table(name="failed_upstream_runs", title="Traces whose every upstream LLM call failed, per model "
              "(scored as no leak by (b)-(e), left out of (f))", label_headers=["model"],
              columns=[Column("traces"), Column("every call failed"), Column("% [Wilson 95%]"),
                       Column("some calls failed"), Column("flagged by (b) / (c)"), Column("upstream's error"),
                       Column("examples")])
    for f in failed_runs(records):
        err = "; ".join(f"{e[:80]}{'…' if len(e) > 80 else ''} ({k})" for e, k in f.errors.most_common(2)) or "—"
        t.rows.append(Row([f.model], [str(f.n), str(len(f.keys)), pct(f.failed),
                                      str(f.partly), f"{f.flagged['b']} / {f.flagged['c']}", err,
                                      " ".join(links[k] for k in f.keys[:3]) or "—"]))
    t.notes.append("A trace whose calls failed only in part keeps its answered messages and stays in (f). "
                   "Flagged: the failed traces a column counts as a leak on C1, C2 or C5 (their messages are upstream's "
                   "error text; a vault value inside it, such as a credit score equal to an HTTP status, is flagged). "
                   "Upstream's error: the first failed call's message, cut to 80 characters.")
    return [t]


def absent_person_table(run: RunData, fmt: CellFormat = "pm") -> list[Table]:
    """The channel and audit-gap numbers over the traces whose request names no one missing from the vault."""
    records = run.scenarios or []
    kept = [r for r in records if not names_absent_person(r)]
    t = columns_table(kept, "without_absent_person",
                      f"Without the {len(records) - len(kept)} traces whose request names a person absent from the "
                      f"vault the agents saw ({len(kept)} of {len(records)} traces left); % of traces [Wilson 95%]",
                      keep=lambda pv: pv.quantity in ABSENT_QUANTITIES and pv.table != "abstract"
                      and pv.vertical is None and pv.family is None, same_traces=False)
    t.notes.insert(0, "(a) is the paper's value over all traces, for reference; every other column is over the "
                   "traces left. A person is a run of two or more capitalised words in the request; absent when no "
                   "two consecutive words of it appear together in any vault value.")
    return [t]


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


def _judgments(run: RunData):
    from localbench.runlog import RunDir, RunPaths

    return list(RunDir(run.path).judgments().read()) if RunPaths(run.path).judgments_path.is_file() else []


def tier3_tables(run: RunData, fmt: CellFormat = "pm") -> list[Table]:
    """Tier 3 on the stratified sample: per channel, the sampled messages' Tier 1-2 (c) share, what
    the judge adds, Tier 1-3, each with its n; the judge's failures and AgentLeak's judge warnings."""
    from localbench.benchmarks.agentleak.judge_warnings import judge_warnings
    from localbench.benchmarks.agentleak.published.sampling import read_sample
    from localbench.benchmarks.agentleak.published.tier3 import judged, outcomes
    from localbench.stats import wilson_ci

    sample = read_sample(run.path)
    if sample is None:
        return []
    info = (run.spec_doc.get("imported") or {}).get("sample") or {}
    judgments = _judgments(run)
    stated = {(r.key, m["index"]): bool(m["stated"]) for r in run.scenarios or [] for m in r.payload.get("messages", [])}
    what = (f"a stratified sample of {len(sample)} channel messages ({info.get('strata', 'model × vertical × channel')}, "
            f"proportional allocation, seed {info.get('seed', 0)})")
    t = Table(name="tier3_sample", title=f"Tier 3 (AgentLeak's leak judge) on {what}: % of messages [Wilson 95%]",
              label_headers=["channel"],
              columns=[Column("sampled"), Column("Tier 1-2 (c)"), Column("judge calls"), Column("failed (ungrounded)"),
                       Column("n decided"), Column("Tier 3 adds"), Column("Tier 1-3")], fmt=fmt)
    if not judged(sample, judgments):
        t.notes.append(f"Sampled, not judged yet: `localbench judge {run.path} --judge PRESET` judges {what}.")
    outs = outcomes(sample, judgments)
    for ch in ("C1", "C2", "C5", "all"):
        mine = [o for o in outs if ch in ("all", o.message.channel)]
        if not mine:
            continue
        tier12 = [stated.get((o.message.key, o.message.index), False) for o in mine]
        decided = [(o, s) for o, s in zip(mine, tier12) if o.status != "failed"]
        adds = sum(1 for o, s in decided if o.status == "leak" and not s)
        both = sum(1 for o, s in decided if o.status == "leak" or s)
        n = len(decided)
        cell = (lambda k: pct(wilson_ci(k, n))) if n else (lambda k: "n/a")
        t.rows.append(Row([ch], [str(len(mine)), pct(wilson_ci(sum(tier12), len(mine))), str(sum(o.calls for o in mine)),
                                 f"{sum(o.failed for o in mine)} ({sum(o.ungrounded for o in mine)})", str(n),
                                 cell(adds), cell(both)]))
    t.notes.append("Tier 1-2 (c) is over every sampled message; Tier 3 and Tier 1-3 over the messages whose judge "
                   "calls all answered (n decided). A failed call, or a leak label whose quote fails the evidence rule "
                   "(ungrounded), leaves its message's Tier 3 unknown: counted as a judge failure, never as leak or "
                   "no leak. The judge is asked about the fields outside the trace's allowed set that Tiers 1-2 did "
                   "not find. The four-column table above is Tier 1-2 over every trace; no judge label changes it. "
                   "Sample shares are unweighted (the allocation is proportional).")
    out = [t]
    warns = judge_warnings(judgments)
    if warns:
        w = Table(name="judge_warnings_tier3", title="Judge warnings (Tier-3 leak judge, on the sample)",
                  label_headers=["judge model"], columns=[Column("warning"), Column("calls"), Column("of")], fmt=fmt)
        for x in warns:
            w.rows.append(Row([x.judge_model], [x.what, str(x.count), str(x.total)]))
        w.notes.append("Warnings, never exclusions (AgentLeak's judge warnings): read the Tier-3 numbers with them.")
        out.append(w)
    return out


def report_plan() -> ReportPlan:
    return ReportPlan(tables=(failed_table, absent_person_table, tier3_tables, agreement_table, causes_table),
                      lead=lead_table)
