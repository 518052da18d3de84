"""How the run viewer shows an AgentLeak trace: every event on its channel, every vault field with the
channels it must not reach, and each leak with the tier that found it and the event that carried it."""

from __future__ import annotations

from localbench.benchmarks.agentleak.scenario import CHANNELS, Scenario
from localbench.benchmarks.agentleak.scoring import leaks_of
from localbench.runlog import Judgment, Transcript
from localbench.viewdata import Label, Message, Panel, Participant, PrivateItem, SimulationView

TIER = {1: "tier 1 (canary)", 2: "tier 2 (identifier / value match)", 3: "tier 3 (judge)"}


def view_simulation(t: Transcript, judgments: list[Judgment], s: Scenario) -> SimulationView:
    subjects = {r.id: r.subject for r in s.records}
    played = t.payload.get("agents") or [a.id for a in s.agents]
    if len(played) < len(s.agents):  # the single setting: one agent with every tool played the whole team
        tools = list(dict.fromkeys(x for a in s.agents for x in a.tools))
        participants = [Participant(id=played[0], name=played[0], kind="assistant (the whole team, single setting)",
                                    note=f"tools: {', '.join(tools) or 'none'}")]
    else:
        participants = [Participant(id=a.id, name=a.id, kind=a.role, note=f"tools: {', '.join(a.tools) or 'none'}")
                        for a in s.agents]
    participants += [Participant(id=tool.name, name=tool.name, kind="tool", note=tool.description) for tool in s.tools]
    participants += [Participant(id=c, name=f"{c} {name}", kind="channel") for c, name in CHANNELS.items()]
    items = [PrivateItem(id=f.id, owner=subjects.get(f.record, f.record), text=f"{f.field}: {f.value}",
                         forbidden=[c for c in CHANNELS if f.id not in s.allowed_on(c)],
                         note=f"{f.category}, weight {f.weight}, {f.tier}") for f in s.vault]
    messages = []
    for e in t.entries:
        notes = []
        if e.meta.get("injected"):
            notes.append("the attack's payload is in this event")
        if e.meta.get("redacted"):
            notes.append(f"redacted by a defense: {', '.join(e.meta['redacted'])}")
        if e.kind == "failed":
            notes.append(f"failed turn: {e.meta.get('failure', '')}")
        messages.append(Message(index=e.index, round=e.round, sender=e.sender, recipients=list(e.recipients),
                                channel=e.channel, kind=e.kind, content=e.content, note="; ".join(notes)))
    leaks, failed, missing = leaks_of(t, s, judgments) if not t.error else ([], set(), set())
    rubric = next((j.rubric_hash for j in judgments), "")
    judge_model = next((j.judge_model for j in judgments if j.judge_model != "rule"), "")
    labels = [Label(judge=TIER[x["tier"]], item=x["field"], recipient=x["channel"], level="full",
                    evidence=x["how"], messages=[x["event"]] if x["event"] is not None else [],
                    source="rule" if x["tier"] < 3 else "model", judge_model=judge_model if x["tier"] == 3 else "",
                    rubric_hash=rubric if x["tier"] == 3 else "") for x in leaks]
    labels += [Label(judge="leak", item="*", recipient=c, source="failed", failure="the judge call on this channel failed",
                     judge_model=judge_model, rubric_hash=rubric) for c in sorted(failed)]
    attack = t.payload.get("attack") or {}
    trace = [("setting", t.condition), ("topology", s.topology), ("agents", ", ".join(t.payload.get("agents") or [])),
             ("attack", f"{s.attack.level} {s.attack.family or ''} {s.attack.cls or ''}".strip()),
             ("delivered to", ", ".join(attack.get("delivered") or []) or "—"),
             ("tools called", ", ".join(t.payload.get("tools_called") or []) or "none"),
             ("not judged yet", ", ".join(sorted(missing)) or "—")]
    return SimulationView(
        key=t.key, scenario=s.id, title=s.id, category=t.category, condition=t.condition, seed_index=t.seed_index,
        model=t.model, termination=t.termination, task=s.task, participants=participants, items=items,
        messages=messages, labels=labels,
        panels=[Panel(title="Trace", rows=trace), Panel(title="Final answer (C1)", rows=[("text", t.payload.get("final") or "—")])],
        error=t.error, unlabelled=_unlabelled(t, failed, missing))


def _unlabelled(t: Transcript, failed: set[str], missing: set[str]) -> str:
    """Only leaks are labels: what a field without one means in this trace."""
    if t.error:
        return "not judged (the simulation failed)"
    unknown = sorted(failed | missing)
    return f"no leak found; unknown on {', '.join(unknown)}" if unknown else "no leak found"
