"""An AgentLeak run's channel messages as traces of AgentLeak's toolkit (the PyPI package
``agentleak``, repository yagobski/agentleak), so its detectors can score what localbench scored.

The toolkit's trace (``agentleak.core.trace.Trace``) is a list of events, each with a channel
(``final_output``, ``inter_agent_message``, ``tool_call``, ``tool_response``, ``shared_memory``,
``log``, ``generated_file``), a source, a target and a content. localbench's seven channels map onto
them one to one (``TOOLKIT_CHANNEL``); each event's ``metadata`` says which localbench channel it was
(``unit``: for an imported published trace the single-agent reply is its own unit, ``single``) and
which log entry (``entry``).

A trace carries no vault of its own. The toolkit takes ground truth as canaries (``CanarySet``,
matched verbatim on every channel alike), so a simulation's canary tokens (vault fields of tier
"canary" forbidden somewhere) are passed as its ``obvious`` canaries; every other vault value is
left to the toolkit's own detectors, which is the point of a second detector. The vault and what each
channel allows ride beside the trace (key ``localbench`` of the exported file, which the toolkit's
``Trace.from_dict`` ignores) for the cross-check (``crosscheck.py``), not for the toolkit.

Two kinds of run are read: an ``agentleak`` run (scenarios of the suite; localbench's leaks from
scenario_scores.jsonl, every tier) and an imported published run (``agentleak-traces``: the trace's
flat vault as ``published.adapter`` builds it; localbench's leaks are definition (c), "stated").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from localbench.benchmarks.agentleak.detect import is_canary
from localbench.benchmarks.agentleak.judge_stage import channel_contents
from localbench.benchmarks.agentleak.scenario import CHANNELS, Scenario
from localbench.errors import UserError
from localbench.runlog import ScenarioScore, Transcript

TOOLKIT = "agentleak"  # the toolkit's distribution and import name
TOOLKIT_VERSION = "0.17.0"  # the version this module and the cross-check were written against (pinned in pyproject.toml)
TOOLKIT_CHANNEL: dict[str, str] = {"C1": "final_output", "C2": "inter_agent_message", "C3": "tool_call",
                                   "C4": "tool_response", "C5": "shared_memory", "C6": "log", "C7": "generated_file"}
SINGLE = "single"  # an imported trace's single-agent reply (channel C1, its own quantity in the paper)
IMPORTED = "agentleak-traces"


@dataclass
class SimulationTrace:
    """One simulation as the toolkit reads it, with what the cross-check compares it against.

    ``units``: the channels compared, in order; ``localbench``: unit -> {vault field id: (tier, how)}
    localbench reported as leaked there; ``events``: the toolkit's events (``metadata.unit`` says
    which unit each belongs to)."""

    key: str
    scenario_id: str
    model: str
    scenario: Scenario  # the vault and what each channel allows, as localbench's detectors read them
    units: tuple[str, ...]
    events: list[dict[str, Any]] = field(default_factory=list)
    localbench: dict[str, dict[str, tuple[int, str]]] = field(default_factory=dict)  # unit -> field -> (tier, how)
    request: str = ""  # what the user asked (the scenario's task; an imported trace's request)

    @property
    def canaries(self) -> list[str]:
        """The canary tokens forbidden somewhere: the toolkit's ground truth (``CanarySet.obvious``)."""
        forbidden = {f.id for c in CHANNELS for f in self.scenario.forbidden_on(c)}
        return sorted({f.value.strip() for f in self.scenario.vault if is_canary(f) and f.id in forbidden})

    def unit_channel(self, unit: str) -> str:
        return "C1" if unit == SINGLE else unit

    def forbidden(self, unit: str) -> set[str]:
        return {f.id for f in self.scenario.forbidden_on(self.unit_channel(unit))}

    def allowed(self, unit: str) -> set[str]:
        return set(self.scenario.allowed_on(self.unit_channel(unit)))

    def toolkit_trace(self) -> dict[str, Any]:
        """The toolkit's Trace as a plain dict (``agentleak.Trace.from_dict`` reads it)."""
        return {"run_id": self.key, "agent_name": self.model or "unknown_agent", "scenario_id": self.scenario_id,
                "events": self.events}

    def export(self) -> dict[str, Any]:
        """The exported file: the toolkit's trace, and beside it (``localbench``) the vault and allowed sets."""
        return {**self.toolkit_trace(), "localbench": {
            "canaries": {"obvious": self.canaries},
            "vault": [{"id": f.id, "value": f.value, "kind": f.kind, "tier": f.tier} for f in self.scenario.vault],
            "allowed": {u: sorted(self.allowed(u)) for u in self.units},
            "leaks": {u: {f: {"tier": t, "how": h} for f, (t, h) in self.localbench.get(u, {}).items()}
                      for u in self.units}}}


def _event(unit: str, channel: str, index: int, source: str, target: str, text: str) -> dict[str, Any]:
    return {"event_id": f"e{index:04d}", "channel": TOOLKIT_CHANNEL[channel], "source": source or "unknown",
            "target": target or "unknown", "content": text, "metadata": {"unit": unit, "channel": channel, "entry": index}}


def from_agentleak_run(transcripts: Iterable[Transcript], scenarios: dict[str, Scenario],
                       scores: Iterable[ScenarioScore]) -> list[SimulationTrace]:
    """An ``agentleak`` run's simulations; localbench's leaks are the score stage's (every tier it ran).
    Simulations that crashed carry no messages and are left out."""
    leaks = {r.key: r.payload.get("leaks") or [] for r in scores}
    out = []
    for t in sorted(transcripts, key=lambda t: t.key):
        if t.error:
            continue
        if t.key not in leaks:
            raise UserError(f"simulation {t.key} has no score: run `localbench score` on the run first")
        s = scenarios[t.scenario]
        entries = {e.index: e for e in t.entries}
        events = [_event(c, c, i, entries[i].sender, ",".join(entries[i].recipients), text)
                  for c, items in channel_contents(t).items() for i, text in items]
        found: dict[str, dict[str, tuple[int, str]]] = {}
        for x in leaks[t.key]:
            found.setdefault(x["channel"], {})[x["field"]] = (int(x["tier"]), str(x["how"]))
        out.append(SimulationTrace(t.key, t.scenario, t.model, s, tuple(CHANNELS),
                                   sorted(events, key=lambda e: e["event_id"]), found, s.task))
    return out


def from_imported_run(transcripts: Iterable[Transcript], scores: Iterable[ScenarioScore]) -> list[SimulationTrace]:
    """An imported published run's traces; localbench's leaks are definition (c) ("stated": a vault
    field outside the trace's allowed set, found by Tiers 1-2) per message, as the score stage kept them."""
    from localbench.benchmarks.agentleak.published.adapter import RECORD, trace_scenario

    msgs = {r.key: r.payload.get("messages") or [] for r in scores}
    out = []
    for t in sorted(transcripts, key=lambda t: t.key):
        if t.key not in msgs:
            raise UserError(f"trace {t.key} has no score: run `localbench score` on the run first")
        p = t.payload
        s = trace_scenario(p["scenario_id"], p["vertical"], p["vault"], set(p["allowed_fields"]))
        events: list[dict[str, Any]] = []
        found: dict[str, dict[str, tuple[int, str]]] = {}
        for e, m in zip(t.entries, msgs[t.key]):
            unit = SINGLE if m["source"] == "single_agent" else m["channel"]
            if e.content.strip():
                events.append(_event(unit, m["channel"], e.index, e.sender, ",".join(e.recipients), e.content))
            for name in m.get("stated") or []:
                hit = next((h for h in m.get("hits", []) if h["field"] == name), {"tier": 2, "how": "exact"})
                found.setdefault(unit, {})[f"{RECORD}.{name}"] = (int(hit["tier"]), str(hit["how"]))
        out.append(SimulationTrace(t.key, t.scenario, t.model, s, (SINGLE, "C1", "C2", "C5"), events, found,
                                   p.get("request", "")))
    return out


def simulation_traces(benchmark: str, transcripts: list[Transcript], scenarios: dict[str, Any],
                      scores: list[ScenarioScore]) -> list[SimulationTrace]:
    """The run's simulations as the toolkit's traces, by the run's benchmark."""
    if benchmark == IMPORTED:
        return from_imported_run(transcripts, scores)
    if benchmark == "agentleak":
        return from_agentleak_run(transcripts, scenarios, scores)
    raise UserError(f"the toolkit cross-check reads AgentLeak runs (agentleak, {IMPORTED}), not a {benchmark} run")


def write_traces(sims: list[SimulationTrace], out: Path) -> Path:
    """One toolkit trace per simulation (``<n>.json``, n in key order, as the run's viewer numbers
    them) and index.jsonl (file, simulation key, scenario); returns the index."""
    out.mkdir(parents=True, exist_ok=True)
    lines = []
    for n, s in enumerate(sims):
        name = f"{n:05d}.json"
        (out / name).write_text(json.dumps(s.export(), ensure_ascii=False, indent=1), encoding="utf-8")
        lines.append(json.dumps({"file": name, "key": s.key, "scenario": s.scenario_id, "model": s.model}))
    index = out / "index.jsonl"
    index.write_text("\n".join(lines) + ("\n" if lines else ""), encoding="utf-8")
    return index


def export_run(run: Any, scores: list[ScenarioScore], out: Path) -> Path:
    """`localbench export agentleak-toolkit RUN` (``Benchmark.exports``): ``run`` is the loaded run
    (its benchmark, transcripts and scenarios)."""
    write_traces(simulation_traces(run.benchmark.name, run.transcripts, run.scenarios, scores), out)
    return out
