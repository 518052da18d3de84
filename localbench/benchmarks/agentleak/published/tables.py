"""The study's tables, computed from an imported run's per-trace scores (scenario_scores.jsonl).

- ``four_columns``: every published number (a) beside its recomputation from the upstream flags (b)
  and localbench's detection under the stated definition (c), upstream's scope (d), the declared
  forbidden fields only (e) and without the failed upstream runs (f), Wilson 95% intervals, McNemar
  of (c), (e) and (f) against (b) on the same traces, and whether (b) reproduces (a) at the published
  precision (else by how much it differs).
- ``failed_runs``: per model, the traces whose every upstream call failed, which (f) leaves out.
- ``agreement``: per channel message, upstream's flag against localbench's (c) flag: Cohen's κ and
  the confusion counts.
- ``causes``: the fields on which they disagree, grouped by cause (causes.py), with example traces.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

from localbench.benchmarks.agentleak.published.definitions import FAILED, metric_name
from localbench.benchmarks.agentleak.published.paper import PaperValue, paper_values
from localbench.judging.agreement import cohen_kappa, confusion
from localbench.runlog import ScenarioScore
from localbench.stats import CI, McNemarResult, mcnemar_test, wilson_ci

FAMILY_QUANTITY = "ASR"


COLUMNS = ("b", "c", "d", "e", "f")  # definitions.py
AGAINST_B = ("c", "e", "f")  # each tested against (b) on the same traces


@dataclass
class Compared:
    paper: PaperValue
    n: int
    cols: dict[str, CI]  # COLUMNS; (f)'s n leaves out the traces whose every upstream call failed
    vs_b: dict[str, McNemarResult]  # AGAINST_B, McNemar on the traces both columns score

    @property
    def mcnemar(self) -> McNemarResult:
        """(b) vs (c), the study's first comparison."""
        return self.vs_b["c"]

    @property
    def reproduced(self) -> bool:
        b = 100 * self.cols["b"].estimate
        d = self.paper.decimals
        return round(b, d) == self.paper.value if d is not None else abs(b - self.paper.value) < 1e-9

    @property
    def difference(self) -> float:
        return 100 * self.cols["b"].estimate - self.paper.value


def subset(records: list[ScenarioScore], pv: PaperValue) -> list[ScenarioScore]:
    return [r for r in records if (pv.model is None or r.model == pv.model)
            and (pv.vertical is None or r.category == pv.vertical) and (pv.family is None or r.group == pv.family)]


def paired_mcnemar(b: list[float | None], x: list[float | None]) -> McNemarResult:
    """McNemar (b) vs another column over the traces where both have a value (f has none for failed runs)."""
    pairs = [(u, v) for u, v in zip(b, x) if u is not None and v is not None]
    return mcnemar_test(sum(1 for u, v in pairs if u == 1.0 and v != 1.0),
                        sum(1 for u, v in pairs if u != 1.0 and v == 1.0))


def compare(records: list[ScenarioScore], pv: PaperValue) -> Compared:
    rs = subset(records, pv)
    q = FAMILY_QUANTITY if pv.family else pv.quantity
    vals = {d: [r.metrics.get(metric_name(q, d)) for r in rs] for d in COLUMNS}
    cols = {d: wilson_ci(sum(1 for v in vs if v == 1.0), sum(1 for v in vs if v is not None)) for d, vs in vals.items()}
    return Compared(pv, len(rs), cols, {d: paired_mcnemar(vals["b"], vals[d]) for d in AGAINST_B})


def four_columns(records: list[ScenarioScore]) -> list[Compared]:
    """Every published number under every column (the name kept from when there were four)."""
    return [compare(records, pv) for pv in paper_values()]


def mcnemar_cell(m: McNemarResult) -> str:
    return f"{m.b} / {m.c}, p {p_text(m.p_value)}"


# -- the traces the study sets aside -----------------------------------------------------------------

def failed_run(r: ScenarioScore) -> bool:
    return r.payload.get("termination") == FAILED


def names_absent_person(r: ScenarioScore) -> bool:
    return bool(r.payload.get("absent_people"))


@dataclass
class FailedRuns:
    """One model's traces whose every upstream LLM call failed."""

    model: str
    n: int
    failed: CI  # share of the model's traces
    partly: int  # traces where some calls failed and some answered (kept in (f))
    flagged: dict[str, int]  # failed traces a column flags anyway (C1, C2 or C5 of the multi-agent run)
    errors: Counter  # the first failed call's error, per failed trace
    keys: list[str]


def failed_runs(records: list[ScenarioScore]) -> list[FailedRuns]:
    """Per model, the traces (f) leaves out, what upstream's error said, and whether any column flags them."""
    out = []
    for model in sorted({r.model for r in records}):
        rs = [r for r in records if r.model == model]
        bad = [r for r in rs if failed_run(r)]
        partly = sum(1 for r in rs if not failed_run(r) and (r.payload.get("llm_call_errors") or 0) > 0)
        flagged = {d: sum(1 for r in bad if r.metrics.get(metric_name("multi", d)) == 1.0) for d in ("b", "c")}
        errors = Counter(str(r.payload.get("llm_error") or "(not recorded)") for r in bad)
        out.append(FailedRuns(model, len(rs), wilson_ci(len(bad), len(rs)), partly, flagged, errors,
                              sorted(r.key for r in bad)))
    return out


def pct(ci: CI) -> str:
    if not ci.n:
        return "n/a"
    return f"{100 * ci.estimate:.1f} [{100 * ci.low:.1f}, {100 * ci.high:.1f}]"


def p_text(p: float) -> str:
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


# -- agreement per channel message -----------------------------------------------------------------

MESSAGE_KINDS = {("C1", "single_agent"): "C1 single-agent reply", ("C2", "coordinator"): "C2 coordinator → worker",
                 ("C2", "worker"): "C2 worker → coordinator", ("C5", "worker"): "C5 memory write",
                 ("C1", "coordinator"): "C1 multi-agent final output"}


@dataclass
class ChannelAgreement:
    kind: str
    n: int
    both: int
    upstream_only: int
    localbench_only: int
    neither: int
    kappa: CI


def agreement(records: list[ScenarioScore], flag: str = "stated", n_resamples: int = 200) -> list[ChannelAgreement]:
    by_kind: dict[str, tuple[dict[str, str], dict[str, str]]] = defaultdict(lambda: ({}, {}))
    for r in records:
        for m in r.payload.get("messages", []):
            kind = MESSAGE_KINDS.get((m["channel"], m["source"]), f"{m['channel']} {m['source']}")
            up, lb = by_kind[kind]
            k = f"{r.key}#{m['index']}"
            up[k] = "full" if m["upstream"] else "none"
            lb[k] = "full" if m[flag] else "none"
    out = []
    for kind in [*MESSAGE_KINDS.values(), *sorted(set(by_kind) - set(MESSAGE_KINDS.values()))]:
        if kind not in by_kind:
            continue
        up, lb = by_kind[kind]
        cm = confusion(up, lb, binary=True).matrix  # rows upstream (no_leak, leak), columns localbench
        out.append(ChannelAgreement(kind, len(up), cm[1][1], cm[1][0], cm[0][1], cm[0][0],
                                    cohen_kappa(up, lb, binary=True, n_resamples=n_resamples)))
    return out


def mcnemar_rows(compared: list[Compared]) -> list[dict[str, Any]]:
    return [{"id": c.paper.id, "n": c.n, "b_only": c.mcnemar.b, "c_only": c.mcnemar.c, "p": c.mcnemar.p_value}
            for c in compared]
