"""What the run viewer shows of an imported trace: its five channel messages, the upstream flags and
localbench's findings under each definition (a panel), and the vault as private items."""

from __future__ import annotations

from localbench.benchmarks.agentleak.published.definitions import score_messages
from localbench.runlog import Transcript
from localbench.viewdata import Label, Message, Panel, Participant, PrivateItem, SimulationView


def view_simulation(t: Transcript) -> SimulationView:
    p = t.payload
    scored = score_messages(p, [e.content for e in t.entries])
    allowed = set(p["allowed_fields"])
    items = [PrivateItem(id=k, owner="vault", text=v, note=("allowed" if k in allowed else
                         "declared forbidden" if k in p["forbidden_fields"] else "not listed"))
             for k, v in p["vault"].items()]
    labels = []
    for m in scored:
        for f in m.stated:
            labels.append(Label(judge="rules", item=f, recipient=m.channel, level="full", messages=[m.index],
                                source="rule", evidence=next(h.how for h in m.hits if h.field == f)))
    rows = [(f"#{m.index} {m.channel} {m.source}→{p['messages'][m.index]['target']}",
             f"upstream: {', '.join(m.upstream_fields) or '—'} | stated (c): {', '.join(m.stated) or '—'} | "
             f"practice (d): {', '.join(m.practice) or '—'}") for m in scored]
    info = [("trace", p["trace_id"]), ("scenario", p["scenario_id"]), ("attack class", p.get("attack_class") or "none"),
            ("source", f"{p['imported']['file']}:{p['imported']['line']}"), ("request", p["request"]),
            ("LLM calls (failed upstream)", f"{p['llm_calls']} ({p['llm_call_errors']})")]
    return SimulationView(
        key=t.key, scenario=t.scenario, title=f"{p['scenario_id']} · {t.model}", category=t.category, condition=t.condition,
        model=t.model, termination=t.termination, task=p["request"],
        participants=[Participant(id=x, name=x, kind="agent") for x in ("single_agent", "coordinator", "worker")]
        + [Participant(id="user", name="user", kind="person"), Participant(id="memory", name="memory", kind="store")],
        items=items,
        messages=[Message(index=e.index, sender=e.sender, recipients=e.recipients, channel=e.channel, content=e.content,
                          note=f"upstream flag: {'leak ' + ', '.join(e.meta.get('upstream_leaked_fields') or []) if e.meta.get('upstream_has_leak') else 'no leak'}")
                  for e in t.entries],
        labels=labels, panels=[Panel(title="Imported trace", rows=info), Panel(title="Per message", rows=rows)],
        unlabelled="not found by Tier 1-2")
