"""How the run viewer shows one SopriBench simulation: the user's posts (with their images), the
attacker's log, the leaked truth as private items, each leaked attribute's grade with its one answer
and the posts it cited, the answers against the truth, and, for the abductive
attacker, the admitted hypotheses of its evidence graph with the cues they rest on."""

from __future__ import annotations

import base64
import mimetypes
from typing import Any

from localbench.benchmarks.sopri.judge_stage import answers_of
from localbench.benchmarks.sopri.judges import GRANULARITY_JUDGE, truth_text
from localbench.benchmarks.sopri.scenario import DIFFICULTIES, Post, User
from localbench.benchmarks.sopri.taxonomy import slot_of
from localbench.benchmarks.sopri.scoring import grade, unit_level
from localbench.errors import UserError
from localbench.benchmarks.sopri.image_check import image_problem
from localbench.runlog import Judgment, Transcript
from localbench.viewdata import Label, Message, Panel, Participant, PrivateItem, SimulationView

ATTACKER = "attacker"


def _data_uri(user: User, post: Post) -> list[str]:
    """The post's images as data URIs: only plain image files inside the user's folder (a link, a file
    outside the suite or a broken image is left out; a user built in memory has none)."""
    out = []
    for img in post.images:
        try:
            path = user.image_path(img)
            if user.folder is None or image_problem(path, user.folder):
                continue
            data = path.read_bytes()
        except (ValueError, OSError):
            continue
        mime = mimetypes.guess_type(path.name)[0] or "image/png"
        out.append(f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}")
    return out


def _post_message(user: User, post: Post, index: int) -> Message:
    text = "\n".join(x for x in (post.title, post.caption, " ".join(f"#{t}" for t in post.tags)) if x)
    alts = [f"[{img.kind}] {img.alt}".strip() for img in post.images]
    meta = [post.timestamp, f"IP {post.ip_region}" if post.ip_region else ""]
    meta += [f"{k}: {v}" for k, v in post.metadata.items()]
    return Message(index=index, sender=user.id, channel="post", kind="post", content=text,
                   images=_data_uri(user, post), note=" · ".join([post.id, *(m for m in meta if m), *alts]))


def _graph_panel(graph: dict[str, Any]) -> Panel:
    """Each admitted hypothesis with the evidence it rests on (followed back along support edges)."""
    nodes = {n["id"]: n for n in graph.get("nodes") or []}
    into: dict[str, list[str]] = {}
    for e in graph.get("edges") or []:
        if e.get("kind") == "supports":
            into.setdefault(e["dst"], []).append(e["src"])
    rows = []
    for n in nodes.values():
        if n.get("kind") != "hypothesis" or n.get("status") != "admitted":
            continue
        seen, todo, cues = set(), list(into.get(n["id"], [])), []
        while todo:
            src = todo.pop(0)
            if src in seen or src not in nodes:
                continue
            seen.add(src)
            ev = nodes[src]
            where = " ".join(x for x in (ev.get("post") or "", ev.get("carrier") or "",
                                         f"OCR line {ev['line']}" if ev.get("line") else "",
                                         f"crop {ev['box']}" if ev.get("box") else "") if x)
            cues.append(f"{where}: {ev.get('text', '')}" if where else str(ev.get("text", "")))
            todo += into.get(src, [])
        rows.append((n.get("text") or f"{n.get('attribute')}: {n.get('value')}", " | ".join(cues) or "(no support)"))
    return Panel(title="Evidence graph: admitted hypotheses", rows=rows or [("—", "no hypothesis admitted")])


def view_simulation(t: Transcript, judgments: list[Judgment], user: User) -> SimulationView:
    entries = list(t.entries)
    base = max((e.index for e in entries), default=-1) + 1
    post_index = {p.id: base + n for n, p in enumerate(user.posts)}
    messages = [_post_message(user, p, post_index[p.id]) for p in user.posts]
    for e in entries:
        note = f"failed: {e.meta.get('failure', '')}".strip() if e.kind == "failed" else ""
        messages.append(Message(index=e.index, round=e.round, sender=e.sender, recipients=list(e.recipients),
                                channel=e.channel, kind=e.kind, content=e.content, note=note))
    items = [PrivateItem(id=a.slot, owner=user.id, text=f"{a.slot}: {truth_text(a)}", forbidden=[ATTACKER],
                         note=f"sensitivity {a.sensitivity}, {a.dimension}, d{a.leak.difficulty} "
                              f"({DIFFICULTIES[a.leak.difficulty]}), {a.leak.type}, posts {', '.join(a.leak.posts)}"
                              + (f", revealed to {slot_of(a.slot).levels[a.leak.depth - 1]}"
                                 if a.leak.depth and slot_of(a.slot).hierarchical else ""))
             for a in user.leaked if a.leak]
    try:
        answers = answers_of(t)
    except UserError:
        answers = {}
    gran_j = next((j for j in judgments if j.judge == GRANULARITY_JUDGE), None)
    got = grade(user, judgments) if not t.error else None
    labels: list[Label] = []
    unlabelled = "not judged" if not t.error else "not judged (the simulation failed)"
    if got is not None and got.status == "ok":
        for a in got.grades:
            ans = answers.get(a.slot)
            level = (got.levels or {}).get(a.slot)
            labels.append(Label(
                judge=GRANULARITY_JUDGE, item=a.slot, level=unit_level(a.g if a.g_depth is None else a.g_depth),
                evidence=(f"{level} (g = {a.g:.2f}, depth-normalised {a.g_depth if a.g_depth is not None else a.g:.2f}): "
                          f"{ans.value}") if ans is not None else "not answered",
                messages=sorted({post_index[p] for p in (ans.posts if ans else []) if p in post_index}),
                source="rule" if gran_j is not None and gran_j.judge_model == "rule" else "model",
                judge_model=gran_j.judge_model if gran_j else "", rubric_hash=gran_j.rubric_hash if gran_j else ""))
    elif got is not None and got.status == "failed":
        labels = [Label(judge=GRANULARITY_JUDGE, item=a.slot, source="failed",
                        failure=(gran_j.failure if gran_j else None) or got.why,
                        judge_model=gran_j.judge_model if gran_j else "") for a in user.leaked]
        unlabelled = got.why
    levels = (got.levels or {}) if got is not None and got.status == "ok" else {}
    rows = []
    for s, ans in answers.items():
        truth = user.attribute(s)
        verdict = (f"{levels[s]} · " if s in levels else "") + (
            f"truth: {truth_text(truth)}" if truth is not None and truth.leak is not None else "not a leaked attribute")
        rows.append((f"{s} = {ans.value}" + (f" [{', '.join(ans.posts)}]" if ans.posts else ""), verdict))
    rows += [(f"(missed) {a.slot}", truth_text(a)) for a in user.leaked if a.slot not in answers]
    panels = [Panel(title="Answers vs truth", rows=rows or [("—", "no answers")]),
              Panel(title="Simulation", rows=[("attacker", t.condition), ("taxonomy", user.taxonomy), ("image input", str(t.payload.get("image_input", "—"))),
                                              ("route spent", str(t.payload.get("route_spent", 0))),
                                              ("attributes answered", str(len(answers)))])]
    sanitized = t.payload.get("sanitized_posts")
    if sanitized:
        panels.append(Panel(title="Sanitized posts (what the attacker read)",
                            rows=[(str(p.get("id")), " / ".join(str(p.get(k) or "") for k in ("title", "caption"))
                                   + (" " + " ".join(f"#{x}" for x in p.get("tags") or []) if p.get("tags") else ""))
                                  for p in sanitized]))
    if isinstance(t.payload.get("graph"), dict):
        panel = _graph_panel(t.payload["graph"])
        panel.rows += [("drawn in the run directory", ", ".join(t.payload.get("graph_files") or []))] \
            if t.payload.get("graph_files") else []
        panels.append(panel)
    return SimulationView(
        key=t.key, scenario=user.id, title=f"{user.nickname} ({user.id})", category=t.category, condition=t.condition,
        seed_index=t.seed_index, model=t.model, termination=t.termination,
        task=f"Profile {user.nickname} from their {len(user.posts)} public posts." + (f" Bio: {user.bio}" if user.bio else ""),
        participants=[Participant(id=user.id, name=user.nickname, kind="person", note=user.bio or user.ip_region),
                      Participant(id=ATTACKER, name=ATTACKER, kind="agent", note=t.condition)],
        items=items, messages=messages, labels=labels, panels=panels, error=t.error, unlabelled=unlabelled)
