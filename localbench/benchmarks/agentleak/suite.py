"""localbench's own AgentLeak format: one YAML (or JSON) file per scenario, fields as in scenario.py.

It is the format of the repo's suite (scenarios/agentleak-mini/) and of what ``generate`` writes.
Validation is the pydantic model's (an unknown field is an error); on top of it ``lint`` warns about
what validates but will not run or score as its author expects.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from localbench.benchmarks.agentleak.issues import LoadIssue
from localbench.benchmarks.agentleak.scenario import CHANNELS, Scenario
from localbench.scenario_files import validate_mapping


def looks_localbench(data: Any) -> bool:
    return isinstance(data, dict) and "id" in data and "vault" in data


def convert(data: Any, file: str) -> tuple[Scenario, list[LoadIssue]]:
    """A localbench-format mapping as a Scenario, plus warnings; ScenarioError if it does not validate."""
    return validate_mapping(Scenario, data, file, lint, locate=_locate,
                            format_doc="scenarios/README.md, AgentLeak,")


def _locate(msg: str) -> tuple[str, str]:
    """The model's own reference checks: the message says which part is wrong."""
    m = re.match(r"(allowed\.C\d|vault|agent|attack/success|subject|topology)\b", msg)
    if not m:
        return "", msg
    fields = {"agent": "agents", "attack/success": "attack.target_fields", "topology": "agents"}
    return fields.get(m.group(1), m.group(1)), msg


def lint(sc: Scenario, file: str) -> list[LoadIssue]:
    """Warnings for a scenario that validates but will not run or score as its author expects."""
    out: list[LoadIssue] = []

    def warn(field: str, message: str) -> None:
        out.append(LoadIssue(file, field, f"{sc.id}: {message}", None, "lint"))

    if not sc.vault:
        warn("vault", "no vault fields: nothing can leak, nothing will be scored")
    missing = [c for c in CHANNELS if c not in sc.allowed]
    if sc.allowed and missing:
        warn("allowed", f"no entry for {', '.join(missing)}: nothing is allowed there")
    if sc.attack.level != "A0" and not sc.attack.target_fields:
        warn("attack.target_fields", "an attack without target fields: its success cannot be measured")
    if not (sc.success.must_include or sc.success.must_call or sc.success.criteria):
        warn("success", "no success checks: task success cannot be measured")
    if sc.topology != "single" and sc.agents[0].role != "coordinator":
        warn("agents[0].role", f"'{sc.agents[0].role}': the first agent of a multi-agent system is its coordinator")
    used = {t for a in sc.agents for t in a.tools}
    for i, t in enumerate(sc.tools):
        if t.name not in used:
            warn(f"tools[{i}]", f"tool '{t.name}' belongs to no agent")
        if t.records and any(r not in {x.id for x in sc.records} for r in t.records):
            warn(f"tools[{i}].records", f"tool '{t.name}' reads unknown records")
    for i, f in enumerate(sc.vault):
        if not f.value.strip():
            warn(f"vault[{i}].value", f"{f.id} is empty: a detector cannot find it")
    return out


class _Flow(dict):  # type: ignore[type-arg]
    """A mapping written on one line (a record, a vault field)."""


class _FlowList(list):  # type: ignore[type-arg]
    """A list written on one line (an allowed set, an agent's tools)."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(_Flow, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v.items(), flow_style=True))
_Dumper.add_representer(_FlowList, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True))


def dump(sc: Scenario) -> str:
    """The scenario as YAML, byte-for-byte the same for the same scenario (``source`` left out): one
    line per record and per vault field (``generic`` only where true), allowed sets and tool lists
    inline."""
    data = sc.model_dump(mode="json", exclude={"source"})
    data["records"] = [_Flow(r) for r in data["records"]]
    data["vault"] = [_Flow({k: v for k, v in f.items() if k != "generic" or v}) for f in data["vault"]]
    data["allowed"] = {ch: _FlowList(ids) for ch, ids in data["allowed"].items()}
    for a in data["agents"]:
        a["tools"] = _FlowList(a["tools"])
    for t in data["tools"]:
        t["records"], t["fields"] = _FlowList(t["records"]), _FlowList(t["fields"])
    for key in ("target_fields",):
        data["attack"][key] = _FlowList(data["attack"][key])
    for key in ("must_include", "must_call"):
        data["success"][key] = _FlowList(data["success"][key])
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=4096, default_flow_style=False)
