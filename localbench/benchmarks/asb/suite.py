"""The normalized scenario format: one YAML or JSON file per scenario, fields as in scenario.py.

This is the format of the repo's own suites (scenarios/asb-mini/, documented in
scenarios/README.md). Validation is the pydantic model's; on top of it a few checks that the model
cannot express (id convention, a graph for multi-party scenarios, tiers for AM) give warnings.
"""

from __future__ import annotations

import re
from typing import Any

from localbench.benchmarks.asb.issues import LoadIssue
from localbench.benchmarks.asb.scenario import MULTI_PARTY, Scenario
from localbench.scenario_files import validate_mapping


def looks_normalized(data: Any) -> bool:
    return isinstance(data, dict) and "id" in data and ("people" in data or "items" in data)


def convert(data: Any, file: str) -> tuple[Scenario, list[LoadIssue]]:
    """A normalized-format mapping as a Scenario, plus warnings; ScenarioError if it does not validate."""
    return validate_mapping(Scenario, data, file, lint, locate=_locate)


def _locate(msg: str) -> tuple[str, str]:
    """The model's own reference checks put the field first: "agents[0].user: ..."."""
    head, sep, rest = msg.partition(": ")
    if sep and re.fullmatch(r"[A-Za-z_][\w.\[\]]*", head):
        return head, rest
    return "", msg


def lint(sc: Scenario, file: str) -> list[LoadIssue]:
    """Warnings for a scenario that validates but will not run or score as its author expects."""
    out: list[LoadIssue] = []
    for i, it in enumerate(sc.items):
        if not re.fullmatch(rf"{re.escape(it.owner)}\.\d+", it.id):
            out.append(LoadIssue(file, f"items[{i}].id", f"'{it.id}' does not follow <owner>.<n>"))
        if sc.category == "AM" and not it.blocked_tiers:
            out.append(LoadIssue(file, f"items[{i}].blocked_tiers", "AM item without blocked tiers is never scored"))
    if not sc.items:
        out.append(LoadIssue(file, "items", "no private items: nothing will be scored"))
    if sc.category in MULTI_PARTY:
        n = len(sc.people)
        pairs = {(e.source, e.target) for e in sc.graph if e.source != e.target}
        if len(pairs) < n * (n - 1):
            out.append(LoadIssue(file, "graph", f"{n * (n - 1) - len(pairs)} ordered pairs have no edge"))
    if sc.category == "MC" and not any(p.simulated for p in sc.people):
        out.append(LoadIssue(file, "people", "MC has no simulated human for the agent to talk to"))
    if sc.category == "CD" and not (sc.source_domain and sc.target_domain):
        out.append(LoadIssue(file, "source_domain", "CD scenario without source_domain/target_domain"))
    if sc.category in ("HS", "CM") and not any(a.task_role == "coordinator" for a in sc.agents):
        out.append(LoadIssue(file, "agents", f"{sc.category} scenario without a coordinator agent"))
    return out
