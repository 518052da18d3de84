"""The tools and the shared memory of one simulation: deterministic, over the scenario's own records.

Nothing leaves the sandbox. A ``lookup`` or ``search`` finds records whose subject (or a field value)
matches the query and returns their fields (the tool's, or all); ``list`` names the records;
``update`` and ``send`` acknowledge. With role separation a tool returns only the fields the task
needs (those allowed in the final output) and names.
"""

from __future__ import annotations

import re

from localbench.benchmarks.agentleak.attacks import Injection
from localbench.benchmarks.agentleak.defenses import Setting
from localbench.benchmarks.agentleak.scenario import Agent, Record, Scenario, Tool, VaultField

MAX_RECORDS = 2
_WORD = re.compile(r"[a-z0-9]{3,}")


class Sandbox:
    def __init__(self, scenario: Scenario, injection: Injection, setting: Setting):
        self.scenario, self.injection, self.setting = scenario, injection, setting
        self.memory: dict[str, str] = dict(injection.memory_seed())
        self.tools = {t.name: t for t in scenario.tools}

    # -- tools ---------------------------------------------------------------------------------
    def _fields(self, tool: Tool, record: Record) -> list[VaultField]:
        out = [f for f in self.scenario.vault if f.record == record.id and (not tool.fields or f.field in tool.fields)]
        if self.setting.role_separation:
            needed = self.scenario.allowed_on("C1")
            out = [f for f in out if f.id in needed or f.kind == "name"]
        return out

    def _matches(self, tool: Tool, query: str) -> list[Record]:
        words = set(_WORD.findall(query.lower()))
        records = [r for r in self.scenario.records if not tool.records or r.id in tool.records]
        scored = []
        for r in records:
            text = " ".join([r.subject, r.type] + [f.value for f in self.scenario.vault if f.record == r.id]).lower()
            hits = sum(1 for w in words if w in text)
            if hits:
                scored.append((-hits, records.index(r), r))
        return [r for _, _, r in sorted(scored)[:MAX_RECORDS]]

    def call(self, name: str, query: str, agent: Agent) -> tuple[str, bool]:
        """The tool's result for ``query`` (and whether an attack rode on it)."""
        tool = self.tools[name]
        if tool.action in ("update", "send"):
            result = f"done: {name} recorded the request"
        elif tool.action == "list":
            records = [r for r in self.scenario.records if not tool.records or r.id in tool.records]
            result = "records: " + "; ".join(f"{r.subject} ({r.type})" for r in records)
        else:
            found = self._matches(tool, query)
            if not found:
                result = f"no record matches {query!r}"
            else:
                result = "\n".join(f"{r.type} {r.subject}: " + "; ".join(f"{f.field}: {f.value}"
                                                                           for f in self._fields(tool, r))
                                   for r in found)
        return self.injection.tool_result(result)

    # -- shared memory -------------------------------------------------------------------------
    def memory_keys(self) -> list[str]:
        return sorted(self.memory)

    def remember(self, key: str, value: str) -> None:
        self.memory[key] = value

    def recall(self, key: str) -> tuple[str, bool]:
        if key not in self.memory:
            return "(nothing under this key)", False
        return self.memory[key], self.injection.memory_read(key)
