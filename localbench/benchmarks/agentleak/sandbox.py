"""The tools and the shared memory of one simulation: deterministic, over the scenario's own records.

Nothing leaves the sandbox. A ``lookup`` or ``search`` finds records whose subject (or a field value)
matches the query and returns only the fields the call asked for, of those the tool can return
(minimising by design: a forbidden field in a tool's answer is a leak the asking call caused, its
request on C3 and the answer on C4); ``list`` gives the records' ids and types (no names: a name is
a field, asked for like any other); ``update`` and ``send``
acknowledge. With role separation a tool returns only the fields the task needs (those allowed in
the final output) and names.
"""

from __future__ import annotations

import re

from localbench.benchmarks.agentleak.attacks import Injection
from localbench.benchmarks.agentleak.defenses import Setting
from localbench.benchmarks.agentleak.scenario import Agent, Record, Scenario, Tool, VaultField

MAX_RECORDS = 2


def tool_fields(scenario: Scenario, tool: Tool) -> tuple[str, ...]:
    """The field names a lookup or search tool can return (its own list, or every field of the records
    it reads); none for a tool that returns no record fields (list, update, send)."""
    if tool.action not in ("lookup", "search"):
        return ()
    if tool.fields:
        return tuple(tool.fields)
    return tuple(dict.fromkeys(f.field for f in scenario.vault if not tool.records or f.record in tool.records))
_WORD = re.compile(r"[a-z0-9]{3,}")


class Sandbox:
    def __init__(self, scenario: Scenario, injection: Injection, setting: Setting):
        self.scenario, self.injection, self.setting = scenario, injection, setting
        self.memory: dict[str, str] = dict(injection.memory_seed())
        self.tools = {t.name: t for t in scenario.tools}

    # -- tools ---------------------------------------------------------------------------------
    def _fields(self, tool: Tool, record: Record, asked: list[str] | None) -> list[VaultField]:
        out = [f for f in self.scenario.vault if f.record == record.id and f.field in tool_fields(self.scenario, tool)
               and (asked is None or f.field in asked)]
        if self.setting.role_separation:
            needed = self.scenario.allowed_on("C1")
            out = [f for f in out if f.id in needed or f.kind == "name"]
        return out

    def _matches(self, tool: Tool, query: str) -> list[Record]:
        """The records a query names: by record id (``r1``), else by the most words of their subject,
        type or values; only the best-matching ones (at most ``MAX_RECORDS``), so a lookup by name
        does not bring a second record along."""
        words = set(_WORD.findall(query.lower()))
        tokens = set(re.findall(r"[A-Za-z0-9_]+", query))
        records = [r for r in self.scenario.records if not tool.records or r.id in tool.records]
        scored = []
        for r in records:
            text = " ".join([r.subject, r.type] + [f.value for f in self.scenario.vault if f.record == r.id]).lower()
            hits = sum(1 for w in words if w in text) + (1000 if r.id in tokens else 0)
            if hits:
                scored.append((-hits, records.index(r), r))
        best = min((h for h, _, _ in scored), default=0)
        return [r for h, _, r in sorted(scored)[:MAX_RECORDS] if h == best]

    def call(self, name: str, query: str, agent: Agent, fields: list[str] | None = None) -> tuple[str, bool]:
        """The tool's result for ``query``, with the ``fields`` asked for (and whether an attack rode on it)."""
        tool = self.tools[name]
        if tool.action in ("update", "send"):
            result = f"done: {name} recorded the request"
        elif tool.action == "list":
            records = [r for r in self.scenario.records if not tool.records or r.id in tool.records]
            result = "records: " + "; ".join(f"{r.id} ({r.type})" for r in records)
        else:
            found = self._matches(tool, query)
            if not found:
                result = f"no record matches {query!r}"
            else:
                result = "\n".join(f"{r.type} {r.id}: " + ("; ".join(f"{f.field}: {f.value}"
                                                                        for f in self._fields(tool, r, fields))
                                                              or "(no fields asked)")
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
