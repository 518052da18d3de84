"""How the run viewer shows an AgentSocialBench simulation (``localbench.viewdata.SimulationView``).

Participants are the agents and the people; private items carry who must not receive them (the
other side of the boundary in the dyadic categories, the forbidden recipients in the multi-party
ones); each leakage label is one (item[, recipient]) with its level and evidence, and the messages
that carried it are the delivered messages towards that side whose text contains the evidence.
Abstraction, task and behaviour judgments are panels. A failed judge call is a failed label for
every unit it covered, never a clean one.
"""

from __future__ import annotations

import re
from localbench.benchmarks.asb.boundaries import forbidden_recipients, person_of, side_of
from localbench.benchmarks.asb.scenario import PrivateItem, Scenario
from localbench.runlog import Judgment, Transcript
from localbench.viewdata import Label, Message, Panel, Participant, PrivateItem as ViewItem, SimulationView

LEAKAGE = ("privacy", "privacy_pairs")
_SPACE = re.compile(r"\s+")


def _norm(text: str) -> str:
    return _SPACE.sub(" ", text).strip().lower()


def _participants(s: Scenario) -> list[Participant]:
    names = {p.id: p.name for p in s.people}
    out = [Participant(id=p.id, name=p.name, kind="simulated person" if p.simulated else "person") for p in s.people]
    for a in s.agents:
        note = f"acts for {names.get(a.user, a.user)}" + (f" ({a.domain})" if a.domain not in ("", "general") else "")
        out.append(Participant(id=a.id, name=f"{names.get(a.user, a.user)}'s agent", kind=a.task_role, note=note))
    return out


def forbidden_of(s: Scenario, item: PrivateItem) -> list[str]:
    """Who must not receive ``item``: the other side (dyadic), the forbidden people (multi-party)."""
    if not s.is_dyadic:
        return forbidden_recipients(s, item)
    own = side_of(s, item.holder)
    ids = [a.id for a in s.agents] + [p.id for p in s.people]
    return [p for p in ids if side_of(s, p) not in (None, own)]


def _items(s: Scenario) -> list[ViewItem]:
    return [ViewItem(id=it.id, owner=it.owner, text=it.text, forbidden=forbidden_of(s, it),
                     note=", ".join(x for x in (f"sensitivity {it.sensitivity}" if it.sensitivity else "",
                                                   it.domain or "", f"about {it.about}" if it.about else "") if x))
            for it in s.items]


def _messages(t: Transcript) -> list[Message]:
    out = []
    for e in t.entries:
        note = (e.call or {}).get("failure") or ""
        if e.kind == "held":
            note = note or "held back: not delivered"
        out.append(Message(index=e.index, round=e.round, sender=e.sender, recipients=list(e.recipients),
                           channel=e.channel, kind=e.kind, content=e.content, note=note or ""))
    return out


def _carriers(s: Scenario, t: Transcript, item: PrivateItem, recipient: str, evidence: str) -> list[int]:
    """Delivered messages towards ``recipient`` (or across the boundary) whose text holds the evidence."""
    needle = _norm(evidence)
    if len(needle) < 3:
        return []
    out = []
    for e in t.entries:
        if e.kind != "message" or needle not in _norm(e.content):
            continue
        if recipient:
            reached = {person_of(s, r) for r in e.recipients} | set(e.recipients)
            if recipient not in reached:
                continue
        elif not any(r in forbidden_of(s, item) for r in e.recipients):
            continue
        out.append(e.index)
    return out


def _covered(s: Scenario, j: Judgment) -> list[PrivateItem]:
    """The items a (failed) privacy call was about: its owner's, or all of them."""
    owner = j.target.split("#")[0]
    mine = [it for it in s.items if it.owner == owner]
    return mine or list(s.items)


def _source(j: Judgment) -> str:
    return "failed" if j.failure or j.label is None else ("rule" if j.judge_model == "rule" else "model")


def _leak_labels(s: Scenario, t: Transcript, j: Judgment) -> list[Label]:
    common = {"judge": j.judge, "judge_model": j.judge_model, "rubric_hash": j.rubric_hash, "source": _source(j)}
    if j.failure or j.label is None:
        return [Label(item=it.id, recipient=p, level=None, failure=j.failure or "no label", **common)
                for it in _covered(s, j) for p in (forbidden_of(s, it) if j.judge == "privacy_pairs" else [""])]
    by_id = {it.id: it for it in s.items}
    out = []
    evidence = j.label.get("evidence") or {}
    for item_id, value in (j.label.get("levels") or {}).items():
        it = by_id.get(item_id)
        ev = str(evidence.get(item_id) or "")
        pairs = value.items() if isinstance(value, dict) else [("", value)]
        for recipient, level in pairs:
            carried = _carriers(s, t, it, recipient, ev) if it is not None and level != "none" else []
            out.append(Label(item=item_id, recipient=recipient, level=level, evidence=ev, messages=carried, **common))
    return out


def _panel(j: Judgment) -> Panel:
    title = {"abstraction": "Abstraction (IAS)", "task": "Task completion", "behaviour": "Behaviours"}.get(j.judge, j.judge)
    source = _source(j)
    rows: list[tuple[str, str]] = [("judge", f"{j.judge_model or '—'} ({source}), rubric {j.rubric_hash or '—'}")]
    if source == "failed":
        return Panel(title=f"{title} — failed", rows=rows + [("failure", j.failure or "no label")])
    label = j.label or {}
    if j.judge == "abstraction":
        rows += [(f"message #{k}", "n/a" if v is None else f"{v:g}") for k, v in (label.get("scores") or {}).items()]
    elif j.judge == "task":
        rows += [("completed", "yes" if label.get("task_completed") else "no"), ("TCQ", f"{label.get('tcq', 0):g}"),
                 ("justification", str(label.get("justification") or ""))]
    elif j.judge == "behaviour":
        flags = label.get("flags") or {}
        rows += [("observed", ", ".join(k for k, v in flags.items() if v) or "none"),
                 ("not observed", ", ".join(k for k, v in flags.items() if not v) or "none"),
                 ("evidence", str(label.get("evidence") or ""))]
    else:
        rows += [(k, str(v)) for k, v in label.items()]
    return Panel(title=title, rows=rows)


def view_simulation(t: Transcript, judgments: list[Judgment], s: Scenario) -> SimulationView:
    labels: list[Label] = []
    panels: list[Panel] = []
    for j in sorted(judgments, key=lambda j: (j.judge not in LEAKAGE, j.judge, j.target)):
        if j.judge in LEAKAGE:
            labels += _leak_labels(s, t, j)
        else:
            panels.append(_panel(j))
            if _source(j) == "failed":
                labels.append(Label(judge=j.judge, source="failed", failure=j.failure or "no label",
                                    judge_model=j.judge_model, rubric_hash=j.rubric_hash))
    info: list[tuple[str, str]] = [("subtype", str(t.payload.get("subtype", s.subtype))),
                                   ("privacy mode", str(t.payload.get("mode", ""))),
                                   ("rounds", f"{t.rounds} of {t.max_rounds}"),
                                   ("calls", f"{t.n_calls} ({t.n_failed_turns} failed turns)"),
                                   ("context cuts", str(t.n_context_cuts))]
    if s.source_domain:
        info.append(("domains", f"{s.source_domain} → {s.target_domain}"))
    return SimulationView(
        key=t.key, scenario=t.scenario, title=s.id, category=t.category, condition=t.condition, seed_index=t.seed_index,
        model=t.model, termination=t.termination, task=s.task, participants=_participants(s), items=_items(s),
        messages=_messages(t), labels=labels, panels=[Panel(title="Simulation", rows=info), *panels], error=t.error)
