"""The study's tables, computed from an imported run's per-trace scores (scenario_scores.jsonl).

- ``four_columns``: every published number (a) beside its recomputation from the upstream flags (b)
  and localbench's detection under the stated definition (c) and upstream's scope (d), Wilson 95%
  intervals, McNemar (b) vs (c) on the same traces, and whether (b) reproduces (a) at the published
  precision (else by how much it differs).
- ``agreement``: per channel message, upstream's flag against localbench's (c) flag: Cohen's κ and
  the confusion counts.
- ``causes``: the fields on which they disagree, grouped by cause (causes.py), with example traces.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from localbench.benchmarks.agentleak.published.definitions import metric_name
from localbench.benchmarks.agentleak.published.paper import PaperValue, paper_values
from localbench.judging.agreement import cohen_kappa, confusion
from localbench.runlog import ScenarioScore
from localbench.stats import CI, McNemarResult, mcnemar_test, wilson_ci

FAMILY_QUANTITY = "ASR"


@dataclass
class Compared:
    paper: PaperValue
    n: int
    cols: dict[str, CI]  # b, c, d
    mcnemar: McNemarResult

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


def compare(records: list[ScenarioScore], pv: PaperValue) -> Compared:
    rs = subset(records, pv)
    q = FAMILY_QUANTITY if pv.family else pv.quantity
    vals = {d: [r.metrics.get(metric_name(q, d)) for r in rs] for d in "bcd"}
    n = len(rs)
    cols = {d: wilson_ci(int(sum(1 for v in vs if v == 1.0)), n) for d, vs in vals.items()}
    only_b = sum(1 for x, y in zip(vals["b"], vals["c"]) if x == 1.0 and y != 1.0)
    only_c = sum(1 for x, y in zip(vals["b"], vals["c"]) if x != 1.0 and y == 1.0)
    return Compared(pv, n, cols, mcnemar_test(only_b, only_c))


def four_columns(records: list[ScenarioScore]) -> list[Compared]:
    return [compare(records, pv) for pv in paper_values()]


def pct(ci: CI) -> str:
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
