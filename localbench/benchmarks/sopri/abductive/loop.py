"""The abductive loop: perceive → hypothesize → select → route → collect → verify, over one graph.

- **perceive**: every post is skimmed once into raw evidence (cues cited by their post and carrier);
- **hypothesize**: new candidates from the whole graph (duplicates of any hypothesis, whatever its
  status, are dropped);
- **select**: the active hypothesis with the fewest routes taken, oldest first (deterministic);
- **route**: ``routing``'s table for common cues, else a grammar-constrained model choice, never
  beyond the route budget;
- **collect**: the tool runs; what it returns becomes evidence derived from the cue it followed up;
- **verify**: a grammar-constrained verdict: admitted (with the evidence that grounds it), kept
  unresolved, or removed. An unresolved hypothesis with nothing left to route is suspended until new
  evidence reaches its neighbourhood.

The loop stops when the graph is stable (no new candidate and nothing woke), when no hypothesis is
active, or when the budget cannot pay for any tool. The profile is projected from admitted,
grounded hypotheses only; suspended and unresolved ones never reach it.

Ablations (``ctx.condition.without``) change what runs: no perceiver → no skim (the hypothesizer
reads the posts and cites cues in them); no hypothesizer → the candidates come once from one
projection call over the evidence and then go through routing and verification as usual (none is
proposed later); no investigator → no routes; no verifier → every candidate admitted unchecked;
no graph → a flat evidence list, no derivation edges, no suspension.

Every model call goes through ``ctx.calls.call`` under a JSON-schema grammar with a seed from
``ctx.seed``; a call that fails is logged as a failed step (and counted by the calls), never read as
"nothing found".
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from localbench.benchmarks.sopri.abductive.graph import EvidenceGraph, Node, norm
from localbench.benchmarks.sopri.abductive.routing import (
    Budget,
    Route,
    affordable,
    fallback_schema,
    table_routes,
)
from localbench.benchmarks.sopri.attack import (
    EVIDENCE_CHARS,
    VALUE_CHARS,
    AttackContext,
    Inference,
    profile_of,
    profile_schema,
)
from localbench.benchmarks.sopri.abductive.routing import image_of
from localbench.benchmarks.sopri.posts import PostsInput, carriers_of, content
from localbench.benchmarks.sopri.prompting import PROMPTS
from localbench.benchmarks.sopri.taxonomy import taxonomy
from localbench.benchmarks.sopri.ocr import OcrReader
from localbench.runtime.calls import FittedCall
from localbench.serving.output import OutputSpec

ROLE = "attacker"
CUE_CHARS = 160
REASON_CHARS = 160
MAX_CUES = 6
MAX_NEW = 4
MAX_SUPPORT = 4
TOOL_TEXT_CHARS = 400
MAX_TOOL_LINES = 8
VERDICTS = ("admit", "unresolved", "remove")


@dataclass
class LoopSettings:
    """Knobs of one run (from ``ctx.settings``): how long the loop may go on."""

    max_rounds: int = 3  # hypothesize passes
    max_steps: int = 24  # select → verify steps in all
    max_routes: int = 2  # routes per hypothesis before it waits for its neighbourhood
    max_iterations: int = 6  # select → verify iterations per hypothesis (the paper's limit)

    @classmethod
    def of(cls, settings: dict[str, Any]) -> "LoopSettings":
        """``abductive_rounds`` / ``_steps`` / ``_routes`` from ``spec.extra``; the rounds default to the
        run's round limit for the user's cohort (``max_rounds``)."""
        keys = {"max_rounds": "abductive_rounds", "max_steps": "abductive_steps", "max_routes": "abductive_routes",
                "max_iterations": "abductive_iterations"}
        got = {k: int(settings[v]) for k, v in keys.items() if settings.get(v) is not None}
        if "max_rounds" not in got and settings.get("max_rounds") is not None:
            got["max_rounds"] = int(settings["max_rounds"])
        return cls(**got)


@dataclass
class LoopState:
    graph: EvidenceGraph
    budget: Budget
    steps: list[dict[str, Any]] = field(default_factory=list)
    tried: set[str] = field(default_factory=set)  # route signatures already run
    termination: str = "answered"
    n: int = 0  # step counter
    iterations: dict[str, int] = field(default_factory=dict)  # hypothesis id -> select → verify iterations
    round: int = 1  # hypothesize pass (the perceive skim belongs to the first)


def where(e: Node) -> str:
    parts = [p for p in (e.post, e.carrier) if p]
    if e.line is not None:
        parts.append(f"line {e.line}")
    if e.box is not None:
        parts.append("box " + ",".join(map(str, e.box)))
    return " ".join(parts) or (e.source or "")


def ev_view(g: EvidenceGraph, ids: list[str] | None = None) -> list[dict[str, str]]:
    nodes = g.evidence() if ids is None else [g.nodes[i] for i in ids]
    return [{"id": e.id, "where": where(e), "text": e.text} for e in sorted(nodes, key=lambda n: n.seq)]


def _str(max_len: int, min_len: int = 1) -> dict[str, Any]:
    return {"type": "string", "minLength": min_len, "maxLength": max_len}


def _obj(**props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": list(props), "properties": props}


def _ids(ids: list[str], min_items: int = 0, max_items: int = MAX_SUPPORT) -> dict[str, Any]:
    if not ids:
        return {"type": "array", "maxItems": 0}
    return {"type": "array", "items": {"enum": ids}, "minItems": min_items, "maxItems": max_items}


class AbductiveLoop:
    """One user's investigation under one condition."""

    def __init__(self, ctx: AttackContext):
        self.ctx = ctx
        self.on = ctx.condition.enabled
        self.settings = LoopSettings.of(ctx.settings)
        self.state = LoopState(EvidenceGraph(flat=not self.on("graph")), Budget(int(ctx.budget)))
        self.slots = taxonomy(ctx.user.taxonomy).slots  # the user's taxonomy: what the answer is keyed by
        self.system = PROMPTS.render("abductive_system.j2", slots=self.slots)
        self.posts: PostsInput | None = None  # prepared when the run starts (images read once)

    @property
    def graph(self) -> EvidenceGraph:
        return self.state.graph

    # -- bookkeeping -----------------------------------------------------------------------------
    def record(self, phase: str, **fields: Any) -> dict[str, Any]:
        """One step of the per-step log (``payload["steps"]``); the caller writes the conversation log."""
        st = self.state
        st.n += 1
        step = {"n": st.n, "round": st.round, "phase": phase, **fields}
        st.steps.append(step)
        return step

    def note(self, phase: str, content: str, **fields: Any) -> None:
        """A step without a model call or a tool (an unchecked admission, a stop): logged as ``step``."""
        self.record(phase, **fields)
        self.ctx.log.add(round=self.state.round, kind="step", sender=ROLE, content=content, phase=phase,
                         meta={"step": phase, **fields})

    async def ask(self, phase: str, template: str, context: dict[str, Any], schema: dict[str, Any],
                  seed_parts: tuple[Any, ...], parts: list[dict[str, Any]] | None = None, trim: str | None = None,
                  **fields: Any) -> Any | None:
        """One grammar-constrained call; the parsed answer, or None after logging the failure
        (``model_call`` / ``failed`` entries, as every SopriBench attacker logs them). ``trim`` names
        the list in ``context`` (evidence, posts) whose oldest items are dropped, as a recorded
        context cut, when the prompt would not fit the model's window."""
        def build(k: int) -> list[Any]:
            ctx = {**context, trim: context[trim][k:]} if trim else context
            instruction = PROMPTS.render(template, **ctx)
            body: Any = content([*parts, instruction]) if parts else instruction
            return [{"role": "system", "content": self.system}, {"role": "user", "content": body}]

        output = OutputSpec.from_schema(schema, name=f"abductive_{phase}")
        st = self.state
        fc: FittedCall = await self.ctx.calls.call(
            role=ROLE, build=build, n_history=len(context[trim]) if trim else 0, output=output,
            seed=self.ctx.seed("abductive", phase, *seed_parts), tag=f"{self.ctx.key} {phase} {st.n + 1}",
            where={"round": st.round, "speaker": ROLE, "step": f"{phase} {st.n + 1}"})
        res = fc.result
        self.record(phase, prompt=template, role=ROLE, ok=res.ok, failure=res.failure, **fields)
        meta = {"step": phase, "n": st.n, "schema": output.schema_hash, "schema_name": output.name, **fields}
        if not res.ok:
            meta["failure"] = res.failure
        self.ctx.log.add(round=st.round, kind="model_call" if res.ok else "failed", sender=ROLE, content=res.text,
                         role=ROLE, phase=phase, action=res.parsed if res.ok else None, call=res.summary(),
                         context=fc.fit.record(), meta=meta)
        return res.parsed if res.ok else None

    # -- phases ----------------------------------------------------------------------------------
    async def perceive(self) -> None:
        user = self.ctx.user
        for post in user.posts:
            cs = carriers_of(post)
            schema = _obj(cues={"type": "array", "maxItems": MAX_CUES,
                                "items": _obj(text=_str(CUE_CHARS), carrier={"enum": cs})})
            ans = await self.ask("perceive", "abductive_perceive.j2",
                                 {"post_id": post.id, "nickname": user.nickname, "carriers": cs, "max_cues": MAX_CUES},
                                 schema, (post.id,), parts=self.posts.post_parts(post), post=post.id)
            for cue in (ans or {}).get("cues", []):
                self.graph.add_evidence(cue["text"], source="perceive", posts=[post.id], carrier=cue["carrier"])

    def _posts_text(self) -> list[str]:
        """Every post as text (what a hypothesizer without perceiver reads; images by alt and OCR text)."""
        assert self.posts is not None
        return [self.posts.post_text(p) for p in self.ctx.user.posts]

    async def hypothesize(self, rnd: int) -> list[str]:
        g, user = self.graph, self.ctx.user
        ev = g.evidence()
        post_ids = [p.id for p in user.posts]
        base = {"attribute": {"enum": [s.name for s in self.slots]}, "value": _str(VALUE_CHARS)}
        if ev:
            item = _obj(**base, support=_ids([e.id for e in ev], 1))
        else:  # nothing perceived: cite the posts and the cue in them
            item = _obj(**base, posts={"type": "array", "items": {"enum": post_ids}, "minItems": 1, "maxItems": 3},
                        cue=_str(CUE_CHARS))
        schema = _obj(hypotheses={"type": "array", "items": item, "maxItems": MAX_NEW})
        hyps = [{"id": h.id, "status": h.status, "text": h.text} for h in g.hypotheses()]
        ans = await self.ask("hypothesize", "abductive_hypothesize.j2",
                             {"evidence": ev_view(g), "hypotheses": hyps, "max_new": MAX_NEW,
                              "posts": [] if ev else self._posts_text()}, schema, (rnd,),
                             trim="evidence" if ev else "posts", round=rnd)
        new = []
        for c in (ans or {}).get("hypotheses", []):
            support = c.get("support") or []
            if not ev:
                support = [g.add_evidence(c["cue"], source="hypothesize", posts=c["posts"]).id]
            h = g.add_hypothesis(c["attribute"], c["value"], support)
            if h is not None:
                new.append(h.id)
        if ans is not None:
            self.state.steps[-1]["new"] = new
        return new

    def select(self) -> Node | None:
        active = self.graph.hypotheses("active")
        return min(active, key=lambda h: (h.routes, h.seq)) if active else None

    async def route(self, h: Node) -> Route | None:
        """The table's first untried, affordable route; else the model's choice among affordable tools."""
        st, tb = self.state, self.ctx.toolbox
        for r in table_routes(self.graph, h.id, self.ctx.user, tb):
            if r.signature not in st.tried and st.budget.affords(r.cost):
                return r
        names = affordable(tb, st.budget)
        if not names:
            return None
        support = self.graph.supporting(h.id)
        ans = await self.ask("route", "abductive_route.j2",
                             {"hypothesis": {"id": h.id, "text": h.text}, "evidence": ev_view(self.graph, support),
                              "tools": "\n".join(f"- {n} (cost {tb.tools[n].cost}): {tb.tools[n].description}"
                                                 for n in names),
                              "budget_left": st.budget.left, "tried": sorted(st.tried)},
                             fallback_schema(tb, names), (h.id, h.routes), hypothesis=h.id)
        if not ans or ans.get("tool") in (None, "none"):
            return None
        r = Route(ans["tool"], ans.get("args", {}), int(tb.tools[ans["tool"]].cost), "model", tuple(support))
        return None if r.signature in st.tried or not st.budget.affords(r.cost) else r

    async def collect(self, h: Node, r: Route) -> list[str]:
        """Run the route's tool (spending its cost) and add what it returns as evidence."""
        st, g, log = self.state, self.graph, self.ctx.log
        st.budget.spend(r)
        st.tried.add(r.signature)
        h.routes += 1
        known = r.tool in log.participants
        log.add(round=st.round, kind="tool_call", sender=ROLE, recipients=[r.tool] if known else [],
                content=json.dumps(r.args), role=ROLE, phase="collect", action={"tool": r.tool, "args": r.args},
                meta={"cost": r.cost, "why": r.why, "hypothesis": h.id})
        res = await asyncio.to_thread(self.ctx.toolbox.run, r.tool, r.args)
        log.add(round=st.round, kind="tool_result", sender=r.tool, recipients=[ROLE] if known else [],
                content=res.text if res.ok else f"error: {res.error}", phase="collect",
                meta={"ok": res.ok, **({"image_bytes": len(res.image)} if res.image else {})})
        added: list[str] = []
        trigger = [t for t in r.trigger if t in g.nodes] or g.supporting(h.id)
        if res.ok:
            img = image_of(self.ctx.user, f"image:{r.args['image']}") if isinstance(r.args.get("image"), str) else None
            lines = [ln.strip() for ln in res.text.splitlines() if ln.strip()]
            if len(lines) > 1 and lines[0].endswith(":"):  # the tool's header line ("OCR of image p1/1:")
                lines = lines[1:]
            for k, ln in enumerate(lines[:MAX_TOOL_LINES], 1):
                e = g.add_evidence(ln[:TOOL_TEXT_CHARS], source=f"tool:{r.tool}", posts=[img[0]] if img else [],
                                   carrier=f"tool:{r.tool}", line=k if r.tool == "ocr" else None,
                                   box=r.args.get("box") if r.tool == "crop" else None, derived_from=trigger)
                added.append(e.id)
        woken = g.wake()
        self.record(f"collect:{r.tool}", tool=r.tool, args=r.args, cost=r.cost, why=r.why, hypothesis=h.id,
                    ok=res.ok, error=res.error, added=added, woken=woken, budget_spent=st.budget.spent)
        return added

    async def verify(self, h: Node) -> None:
        g = self.graph
        if not self.on("verifier"):
            g.set_status(h.id, "admitted", "admitted unchecked (no verifier)")
            self.note("admit", f"{h.id} admitted unchecked (no verifier)", hypothesis=h.id, checked=False)
            return
        near = sorted(g.neighbourhood(h.id) if not g.flat else {e.id for e in g.evidence()},
                      key=lambda i: g.nodes[i].seq)
        schema = _obj(verdict={"enum": list(VERDICTS)}, support=_ids(near), reason=_str(REASON_CHARS, 0))
        ans = await self.ask("verify", "abductive_verify.j2",
                             {"hypothesis": {"id": h.id, "text": h.text}, "evidence": ev_view(g, near),
                              "flat": g.flat}, schema, (h.id, h.routes, len(near)), trim="evidence",
                             hypothesis=h.id)
        if ans is None:  # a failed verdict admits nothing: the hypothesis waits like an unresolved one
            self._unresolved(h, "verifier call failed")
        else:
            for e in ans["support"]:
                g.support(e, h.id)
            if ans["verdict"] == "admit" and ans["support"] and g.grounded(h.id):
                g.set_status(h.id, "admitted", ans["reason"])
            elif ans["verdict"] == "remove":
                g.set_status(h.id, "removed", ans["reason"])
            else:
                why = ans["reason"] if ans["verdict"] == "unresolved" else "admitted without citing evidence"
                self._unresolved(h, why)
        self.state.steps[-1]["status"] = h.status

    def _unresolved(self, h: Node, why: str) -> None:
        """Keep an unresolved hypothesis active while routes remain for it, else suspend it."""
        can_route = self.on("investigator") and h.routes < self.settings.max_routes and \
            bool(affordable(self.ctx.toolbox, self.state.budget))
        if can_route:
            self.graph.set_status(h.id, "active", why)
        else:
            self.graph.suspend(h.id, why)

    async def project_directly(self) -> None:
        """No hypothesizer: one projection call over the evidence gives the candidates, once; they enter
        the loop like the hypothesizer's (routed by the investigator, checked by the verifier), but no
        new candidate is ever proposed from what the loop finds."""
        g, user = self.graph, self.ctx.user
        ev = g.evidence()
        ans = await self.ask("project", "abductive_project.j2",
                             {"nickname": user.nickname, "evidence": ev_view(g), "max_items": self.ctx.max_inferences,
                              "posts": [] if ev else self._posts_text()},
                             profile_schema([p.id for p in user.posts], user.taxonomy), (), trim="evidence" if ev else "posts")
        for inf in profile_of(ans or {}):
            support = [e.id for e in ev if e.post in inf.posts]
            if not support and inf.posts:
                support = [g.add_evidence(inf.evidence or inf.value, source="project", posts=inf.posts).id]
            g.add_hypothesis(inf.attribute, inf.value, support)

    # -- the loop ----------------------------------------------------------------------------------
    async def run(self) -> None:
        g, st, cfg = self.graph, self.state, self.settings
        reader = self.ctx.settings.get("ocr_reader") or getattr(self.ctx.toolbox.tools.get("ocr"), "reader", None) \
            or OcrReader()
        self.posts = await PostsInput.prepare(self.ctx.user, self.ctx.vision, reader)
        for p in self.ctx.user.posts:
            g.add_post(p.id, (p.title or p.caption)[:80])
        if self.on("perceiver"):
            await self.perceive()
        direct = not self.on("hypothesizer")
        if direct:
            await self.project_directly()
        steps = 0
        for rnd in range(1, cfg.max_rounds + 1):
            st.round = rnd
            new = await self.hypothesize(rnd) if not direct else []
            g.wake()
            if not new and not g.hypotheses("active"):
                st.termination = "answered"  # stable: nothing new, nothing woke
                break
            while (h := self.select()) is not None:
                if steps >= cfg.max_steps:
                    break
                steps += 1
                if self.on("investigator") and h.routes < cfg.max_routes and self.ctx.toolbox.tools:
                    if not affordable(self.ctx.toolbox, st.budget):
                        st.termination = "budget"
                        break
                    r = await self.route(h)
                    if r is None:
                        h.routes = cfg.max_routes  # nothing left worth routing: verify on what is at hand
                    else:
                        await self.collect(h, r)
                await self.verify(h)
                st.iterations[h.id] = st.iterations.get(h.id, 0) + 1
                if st.iterations[h.id] >= cfg.max_iterations and h.status in ("active", "suspended"):
                    g.set_status(h.id, "unresolved", f"iteration limit ({cfg.max_iterations}) reached")
            if st.termination == "budget" or steps >= cfg.max_steps:
                break
        for h in g.hypotheses("active") + g.hypotheses("suspended"):
            g.set_status(h.id, "unresolved", h.reason or "the loop ended before it was settled")

    def merged(self) -> list[Node]:
        """Per-attribute merge at projection: of the admitted, grounded hypotheses about one attribute
        (compared by ``norm``), the one with the most supporting evidence (ties: the oldest) is its
        answer; in the order the chosen ones were made."""
        best: dict[str, Node] = {}
        for h in sorted(self.graph.projected(), key=lambda n: n.seq):
            key = norm(h.attribute or "")
            if key not in best or len(self.graph.supporting(h.id)) > len(self.graph.supporting(best[key].id)):
                best[key] = h
        return sorted(best.values(), key=lambda n: n.seq)

    def inferences(self) -> list[Inference]:
        """The profile: one answer per attribute (``merged``) from admitted, grounded hypotheses only,
        oldest first, at most ``max_inferences``."""
        g, order = self.graph, {p.id: k for k, p in enumerate(self.ctx.user.posts)}
        out = []
        for h in self.merged()[: self.ctx.max_inferences]:
            posts = sorted(g.posts_of(h.id), key=lambda p: order.get(p, 0))
            cues = "; ".join(g.nodes[e].text for e in g.supporting(h.id))
            out.append(Inference(attribute=h.attribute or "", value=h.value or "", posts=posts,
                                 evidence=cues[:EVIDENCE_CHARS]))
        return out
