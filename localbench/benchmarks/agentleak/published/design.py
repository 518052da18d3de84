"""The imported-traces plug-in's declaration: one setting (the harness's 2-agent topology), the
vertical as category, and each of the paper's quantities under each definition as a metric
(``<quantity>:<definition>``, definitions b to f of ``definitions.py``), a share of traces with a
Wilson interval. A leaf: it imports nothing but ``localbench.design``."""

from __future__ import annotations

from localbench.design import Axis, Design, Metric, Role

VERTICALS = ("healthcare", "finance", "legal", "corporate")
SETTING = "2-agent"
QUANTITY_TEXT = {"single": "single-agent reply leaked (C1 of the single-agent run)",
                 "C1": "final output (C1) of the multi-agent run leaked",
                 "C2": "an inter-agent message (C2) leaked", "C5": "the memory write (C5) leaked",
                 "multi": "any of C1, C2, C5 of the multi-agent run leaked",
                 "any": "the single-agent reply or the multi-agent run leaked",
                 "H1": "audit gap: C1 clean while C2 or C5 leaked (share of all traces)"}
DEFINITION_TEXT = {"b": "upstream flags", "c": "localbench, stated definition", "d": "localbench, upstream's scope",
                   "e": "localbench, declared-forbidden fields only", "f": "localbench (c), failed upstream runs left out"}

METRICS = tuple(Metric(f"{q}:{d}", f"{text} ({DEFINITION_TEXT[d]})", leakage=True, interval="wilson", pooled=True)
                for q, text in QUANTITY_TEXT.items() for d in DEFINITION_TEXT) + tuple(
    Metric(f"ASR:{d}", f"attack success: any leak among traces with an attack class, per family ({DEFINITION_TEXT[d]})",
           leakage=True, interval="wilson", grouped=True, pooled=True) for d in DEFINITION_TEXT)

DESIGN = Design(
    name="agentleak-traces",
    title="AgentLeak published traces (imported, not re-simulated)",
    axes=(Axis("vertical", "Vertical", "category", values=VERTICALS),
          Axis("setting", "Setting", "condition", values=(SETTING,), default=(SETTING,))),
    roles=(Role("agent", "the model that produced the imported traces (named per trace; not run here)"),
           Role("judge", "labels leaks: localbench's Tier 1-2 rules ('rules'); no model", judge=True)),
    metrics=METRICS,
    headline={v: "multi:c" for v in VERTICALS},
    max_rounds={v: 1 for v in VERTICALS},  # nothing is simulated; the shared spec asks every category for one
    paired_test="mcnemar",
    paired_metrics=tuple((f"{q}:b", f"{q}:{d}") for d in "cef" for q in ("C1", "C2", "C5", "multi", "H1")),
)
