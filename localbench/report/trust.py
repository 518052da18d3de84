"""The report's "How far to trust these numbers" section, from scores.json's ``trust``
(``localbench.judging.trust`` computes it at score time): per judge behind a metric, measured or
not, its verdict, FPR and FNR with their intervals and the gold set it was measured on; per headline
metric, the raw number beside its Rogan–Gladen correction, or why there is none.
"""

from __future__ import annotations

from typing import Any

from localbench.report.data import RunData
from localbench.report.tables import UNMEASURED_MARK
from localbench.scores import UNMEASURED, Interval

TITLE = "How far to trust these numbers"
NOT_SCORED = ("scores.json holds no trust section: either no model judge labelled this run (rules computed every "
              "number, so there is no judge error to correct), or it was scored before localbench computed one; "
              "score it again (`localbench score RUN`, with `--judge-eval EVAL` for the evals that measured its "
              "judges) to see each judge's measurement and the corrected headline metrics.")


def interval_text(i: Interval | None, digits: int = 2) -> str:
    if i is None or i.estimate is None:
        return "—"
    if i.low is None or i.high is None:
        return f"{i.estimate:.{digits}f}"
    return f"{i.estimate:.{digits}f} [{i.low:.{digits}f}, {i.high:.{digits}f}]"


def trust_context(run: RunData) -> dict[str, Any]:
    """What the templates show (strings, already formatted); ``present`` False for a run scored
    before the section existed."""
    trust = run.scores.trust
    if trust is None:
        return {"title": TITLE, "present": False, "missing": NOT_SCORED}
    design = run.design
    judges = []
    for t in trust.judges:
        judges.append({
            "judge": t.judge, "model": t.judge_model, "measured": t.measured,
            "status": "measured" if t.measured else f"NOT MEASURED {UNMEASURED_MARK}",
            "verdict": t.verdict or "—", "fpr": interval_text(t.fpr), "fnr": interval_text(t.fnr),
            "gold": f"{t.n_gold} {t.gold} items" if t.measured else "—",
            "metrics": ", ".join(t.metrics), "eval": t.eval})
    rows = []
    for m in trust.metrics:
        digits = design.metric(m.metric).decimals
        if m.corrected is not None:
            corrected = interval_text(m.corrected, digits)
        else:
            corrected = m.status + (f" {UNMEASURED_MARK}" if m.status == UNMEASURED else "")
        rows.append({
            "metric": m.metric, "model": m.model, "condition": m.condition, "category": m.category,
            "raw": interval_text(m.raw, digits),
            "units": f"{m.leaked}/{m.units}" if m.units else "—",
            "corrected": corrected, "judge": f"{m.judge} ({m.judge_model})", "note": m.note})
    unmeasured = [w.message for w in run.scores.judge_warnings if w.pattern == UNMEASURED]
    return {"title": TITLE, "present": True, "judges": judges, "metrics": rows, "unmeasured": unmeasured,
            "mark": UNMEASURED_MARK, "evals": trust.evals, "notes": list(trust.notes),
            "condition": design.condition.label, "category": design.category.label}
