"""The abductive evidence-graph attacker: graph invariants, the route budget, suspension, ablations
(asserted on the call log), real tool routes (tesseract on a PIL receipt) and an end-to-end run on
the tiny random model under xgrammar."""

from __future__ import annotations

import asyncio
import json
import re

import pytest
from fakes import ScriptedBackend
from sopri_abductive_fixtures import make_user

from localbench.benchmarks.sopri.abductive.graph import EvidenceGraph, GraphData, GraphError
from localbench.benchmarks.sopri.abductive.render import render_html, render_png
from localbench.benchmarks.sopri.abductive.routing import Budget, Route, fill_args, table_routes
from localbench.benchmarks.sopri.attack import AttackContext, Condition, Inference, answer_of, attacker_for
from localbench.benchmarks.sopri.tools import build_toolbox
from localbench.runtime.calls import SimulationCalls
from localbench.runtime.clients import RoleClients
from localbench.runtime.log import ConversationLog
from localbench.serving.client import StructuredClient
from localbench.serving.seeds import derive_seed


# -- the graph on its own --------------------------------------------------------------------------

def _graph(flat: bool = False) -> EvidenceGraph:
    g = EvidenceGraph(flat=flat)
    for p in ("p1", "p2", "p3"):
        g.add_post(p, p)
    return g


def test_graph_typing_duplicates_and_projection_need_a_support_chain():
    g = _graph()
    e1 = g.add_evidence("ran 10k", source="perceive", posts=["p1"], carrier="caption")
    with pytest.raises(GraphError):
        g.add_evidence("floating", source="perceive")  # cites no post, derives from nothing
    with pytest.raises(GraphError):
        g._edge("post:p1", "post:p2", "supports")  # a post cannot support
    h = g.add_hypothesis("hobbies", "running", [e1.id])
    assert h is not None and g.add_hypothesis("Hobbies", "  running!", [e1.id]) is None  # duplicate
    assert g.add_hypothesis("pets", "dog", ["e99"]) is None  # no known support
    with pytest.raises(GraphError):
        g._edge(h.id, e1.id, "supports")  # a hypothesis supports nothing
    assert g.projected() == []  # active is not admitted
    g.set_status(h.id, "admitted")
    assert [n.id for n in g.projected()] == [h.id]
    # an admitted hypothesis whose support chain never reaches a post is not projected
    lone = g._add(type(h)(id="h9", kind="hypothesis", text="x: y", attribute="x", value="y", status="admitted"))
    assert lone.id not in [n.id for n in g.projected()]
    again = EvidenceGraph.from_json(json.loads(json.dumps(g.to_json())))
    assert again.to_json() == g.to_json()
    assert again.add_evidence("more", source="perceive", posts=["p2"]).id == "e2"


def test_projection_merges_each_attribute_into_one_answer():
    """Per-attribute merge at projection: two admitted hypotheses about home give one answer, the one
    with more supporting evidence."""
    from types import SimpleNamespace

    from localbench.benchmarks.sopri.abductive.loop import AbductiveLoop

    g = _graph()
    e1 = g.add_evidence("a street sign", source="perceive", posts=["p1"])
    e2 = g.add_evidence("a receipt", source="perceive", posts=["p2"])
    weak = g.add_hypothesis("home", "Port Ellis", [e1.id])
    strong = g.add_hypothesis("Home", "Harbor District, Port Ellis", [e1.id, e2.id])
    other = g.add_hypothesis("hobbies", "running", [e1.id])
    for h in (weak, strong, other):
        g.set_status(h.id, "admitted")
    merged = AbductiveLoop.merged(SimpleNamespace(graph=g))
    assert [h.id for h in merged] == [strong.id, other.id]


def test_suspended_hypotheses_wake_only_on_new_neighbouring_evidence():
    g = _graph()
    e1 = g.add_evidence("a receipt", source="perceive", posts=["p2"], carrier="image:p2/1")
    other = g.add_evidence("ran 10k", source="perceive", posts=["p1"])
    h = g.add_hypothesis("frequent_place", "a cafe", [e1.id])
    g.suspend(h.id, "needs OCR")
    assert h.status == "suspended" and g.wake() == []  # nothing new
    g.add_evidence("morning run again", source="perceive", posts=["p1"])  # new, but not its neighbourhood
    g.add_hypothesis("hobbies", "running", [other.id])  # a new hypothesis is not evidence
    assert g.wake() == [] and h.status == "suspended"
    g.add_evidence("GREEN LEAF CAFE", source="tool:ocr", derived_from=[e1.id], carrier="tool:ocr", line=1)
    assert g.wake() == [h.id] and h.status == "active"
    g.suspend(h.id)
    g.add_evidence("the p2 caption", source="perceive", posts=["p2"])  # same post: a neighbour
    assert g.wake() == [h.id]
    flat = _graph(flat=True)
    fe = flat.add_evidence("a receipt", source="perceive", posts=["p2"])
    fh = flat.add_hypothesis("frequent_place", "a cafe", [fe.id])
    assert flat.suspend(fh.id) == "unresolved"  # no graph, no waiting for a neighbourhood
    derived = flat.add_evidence("GREEN LEAF", source="tool:ocr", derived_from=[fe.id])
    assert not [e for e in flat.edges if e.dst == derived.id and e.kind == "supports"]  # flat: no derivation edge
    assert flat.posts_of(derived.id) == {"p2"} and flat.wake() == []


def test_budget_refuses_a_route_that_would_overshoot():
    b = Budget(3)
    b.spend(Route("ocr", {"image": "p2/1"}, 2, "table:document"))
    assert b.left == 1 and not b.affords(2)
    with pytest.raises(ValueError):
        b.spend(Route("search", {"query": "x"}, 2, "model"))
    assert b.spent == 2


def test_routing_table_sends_documents_to_ocr_and_places_to_the_gazetteer(tmp_path):
    user = make_user(tmp_path)
    tb = build_toolbox(user, tmp_path / "sandbox")
    g = _graph()
    e = g.add_evidence("a cafe receipt", source="perceive", posts=["p2"], carrier="image:p2/1")
    h = g.add_hypothesis("frequent_place", "Green Leaf Cafe", [e.id])
    routes = table_routes(g, h.id, user, tb)
    assert [(r.tool, r.why) for r in routes] == [("ocr", "table:document"), ("gazetteer", "table:place"),
                                                  ("search", "table:place")]
    assert routes[0].args == {"image": "p2/1"} and routes[1].args == {"name": "Green Leaf Cafe"}
    e3 = g.add_evidence("a dog in a park", source="perceive", posts=["p3"], carrier="image:p3/1")
    h3 = g.add_hypothesis("home", "near a park", [e3.id])
    assert table_routes(g, h3.id, user, tb)[0].tool == "crop"  # a place in a photo: look closer
    assert fill_args(tb.tools["ocr"].args_schema(), {"image": "p9/1"}) is None  # not this user's image


# -- the loop, scripted --------------------------------------------------------------------------

class Script:
    """A scripted attacker model: valid JSON for each abductive prompt, read off the schema it is asked under."""

    def __init__(self, verify=None, route=None):
        self.verify = verify or (lambda text, ids: ("admit", ids[:1]))
        self.route = route or (lambda schema: {"tool": "none"})

    def __call__(self, req):
        name, schema = req.output.name, req.output.schema
        text = req.messages[-1]["content"]
        text = text if isinstance(text, str) else " ".join(p.get("text", "") for p in text)
        props = schema.get("properties", {})
        if name == "abductive_perceive":
            cs = props["cues"]["items"]["properties"]["carrier"]["enum"]
            img = [c for c in cs if c.startswith("image:")]
            post = re.search(r"Skim post (\w+)", text).group(1)
            cues = [{"text": f"cue of {post}", "carrier": "caption"}] + \
                   [{"text": f"an image in {post}", "carrier": c} for c in img]
            out = {"cues": cues}
        elif name == "abductive_hypothesize":
            item = props["hypotheses"]["items"]["properties"]
            if "support" in item:
                ids = item["support"]["items"]["enum"]
                out = {"hypotheses": [{"attribute": "hobbies", "value": "running", "support": ids[:1]},
                                      {"attribute": "frequent_place", "value": "Green Leaf Cafe",
                                       "support": [i for i in ids if re.search(rf"- {i} \[p2 image", text)][:1]
                                       or ids[-1:]}]}
            else:
                out = {"hypotheses": [{"attribute": "hobbies", "value": "running", "posts": ["p1"],
                                       "cue": "Ran 10k along the lake"}]}
        elif name == "abductive_verify":
            ids = props["support"]["items"]["enum"] if "items" in props["support"] else []
            verdict, support = self.verify(text, ids)
            out = {"verdict": verdict, "support": support, "reason": "scripted"}
        elif name == "abductive_route":
            out = self.route(schema)
        elif name == "abductive_project":
            out = {"pets": {"value": "dog", "posts": ["p3"], "evidence": "Biscuit"}}
        else:
            raise AssertionError(f"unexpected prompt {name}")
        return json.dumps(out), "stop"


def _ctx(user, tb, condition: str, backend, budget: int = 24, **settings) -> AttackContext:
    calls = SimulationCalls(RoleClients({"attacker": StructuredClient(backend, cache=None, max_retries=0)}),
                            max_tokens=256, temperatures={"attacker": 0.7})
    cond = Condition.parse(condition)
    return AttackContext(user=user, condition=cond, toolbox=tb, calls=calls, log=ConversationLog(["attacker", *tb.tools]),
                         seed=lambda *p: derive_seed(0, user.id, condition, *p), key=f"{user.id}|{condition}|0",
                         vision=False, budget=budget, settings=settings)


def _run(tmp_path, condition="abductive", script=None, budget=24, **settings):
    user = make_user(tmp_path)
    tb = build_toolbox(user, tmp_path / "sandbox")
    backend = ScriptedBackend(script or Script())
    ctx = _ctx(user, tb, condition, backend, budget, **settings)
    res = asyncio.run(attacker_for(ctx.condition).attack(ctx))
    return res, backend, ctx


def _prompts(backend) -> list[str]:
    return [r.output.name for r in backend.calls]


def _chain_ok(graph: dict, hid: str) -> bool:
    """A path post → evidence (→ evidence …) → hypothesis, checked on the saved JSON alone."""
    kind = {n["id"]: n["kind"] for n in graph["nodes"]}
    into: dict[str, list[str]] = {}
    for e in graph["edges"]:
        into.setdefault(e["dst"], []).append(e["src"])
    todo, seen = [hid], set()
    while todo:
        for src in into.get(todo.pop(), []):
            if kind[src] == "post":
                return True
            if src not in seen:
                seen.add(src)
                todo.append(src)
    return False


def test_ocr_route_grounds_a_hypothesis_that_the_verifier_held_back(tmp_path):
    """The place hypothesis stays unresolved until the table's OCR route (real tesseract on the PIL
    receipt) adds the cafe's name; only then is it admitted, and only admitted ones are projected."""

    def verify(text, ids):
        if "Green Leaf" in text.split("Evidence")[0]:
            return ("admit", [i for i in ids if re.search(rf"- {i} \[p2 tool:ocr line \d\] GREEN LEAF", text)][:1]) \
                if "GREEN LEAF" in text.split("Evidence")[1] else ("unresolved", [])
        return ("admit", ids[:1])

    res, backend, ctx = _run(tmp_path, script=Script(verify=verify))
    graph = res.payload["graph"]
    GraphData.model_validate(graph)
    steps = res.payload["steps"]
    ocr = [s for s in steps if s["phase"] == "collect:ocr"]
    assert ocr and ocr[0]["why"] == "table:document" and ocr[0]["ok"]
    assert any("GREEN LEAF" in n["text"] for n in graph["nodes"] if n.get("source") == "tool:ocr")
    admitted = {n["id"]: n for n in graph["nodes"] if n.get("status") == "admitted"}
    assert {(n["attribute"], n["value"]) for n in admitted.values()} == {("hobbies", "running"),
                                                                        ("frequent_place", "Green Leaf Cafe")}
    assert all(_chain_ok(graph, h) for h in admitted)
    assert {(i.attribute, i.value) for i in res.inferences} == {(n["attribute"], n["value"]) for n in admitted.values()}
    place = next(i for i in res.inferences if i.attribute == "frequent_place")
    assert place.posts == ["p2"] and "GREEN LEAF" in place.evidence
    assert res.payload["route_spent"] <= res.payload["route_budget"]
    assert all(Inference.model_validate(i.model_dump()) for i in res.inferences)
    assert ctx.calls.n_calls == len(backend.calls) and not ctx.calls.failed


def test_unresolved_and_failed_verdicts_are_never_projected(tmp_path):
    res, _, ctx = _run(tmp_path, script=Script(verify=lambda text, ids: ("unresolved", ids[:1])),
                       abductive_rounds=2)
    graph = res.payload["graph"]
    assert res.inferences == []
    assert {n["status"] for n in graph["nodes"] if n["kind"] == "hypothesis"} == {"unresolved"}
    # "admit" without citing evidence is not grounded: kept unresolved
    res2, _, _ = _run(tmp_path / "b", script=Script(verify=lambda text, ids: ("admit", [])))
    assert res2.inferences == []
    # a reply that fails validation is a recorded failure, never an empty verdict
    res3, _, ctx3 = _run(tmp_path / "c", script=lambda req: ("{not json", "stop"))
    assert res3.inferences == [] and ctx3.calls.failed["attacker"] == ctx3.calls.n_calls > 0
    assert all(not s["ok"] and s["failure"] for s in res3.payload["steps"] if "ok" in s and s.get("prompt"))


def test_no_hypothesis_takes_more_than_six_iterations(tmp_path):
    """The paper's limit: at most 6 select → verify iterations per hypothesis, however much budget,
    routes and steps are left (the verifier never settles here)."""
    n = iter(range(10_000))
    res, _, _ = _run(tmp_path, script=Script(verify=lambda t, ids: ("unresolved", ids[:1]),
                                             route=lambda schema: {"tool": "search",
                                                                   "args": {"query": f"cafe {next(n)}"}}),
                     budget=200, abductive_routes=50, abductive_steps=200, abductive_rounds=1)
    per: dict[str, int] = {}
    for s in res.payload["steps"]:
        if s["phase"] == "verify":
            per[s["hypothesis"]] = per.get(s["hypothesis"], 0) + 1
    assert per and max(per.values()) == 6


@pytest.mark.parametrize("budget", [0, 1, 2, 3, 5])
def test_the_route_budget_is_never_exceeded(tmp_path, budget):
    """Every hypothesis wants routes (the verifier never settles, the model always asks for search);
    whatever B, the tools spend at most B, and a route that would overshoot is never offered."""
    offered: list[list[str]] = []

    def route(schema):
        names = [b["properties"]["tool"]["const"] for b in schema["anyOf"]]
        offered.append(names)
        return {"tool": "search", "args": {"query": "cafe"}} if "search" in names else {"tool": "none"}

    res, backend, _ = _run(tmp_path, script=Script(verify=lambda t, ids: ("unresolved", ids[:1]), route=route),
                           budget=budget, abductive_routes=5, abductive_rounds=2)
    spent = sum(s["cost"] for s in res.payload["steps"] if s["phase"].startswith("collect"))
    assert spent == res.payload["route_spent"] <= budget
    costs = {"ocr": 2, "crop": 1, "gazetteer": 1, "search": 2, "none": 0}
    left = budget
    for s in res.payload["steps"]:
        if s["phase"] == "route":
            assert all(costs[n] <= left for n in offered.pop(0))
        if s["phase"].startswith("collect"):
            assert s["cost"] <= left
            left -= s["cost"]
    if budget == 0:
        assert not [s for s in res.payload["steps"] if s["phase"].startswith(("collect", "route"))]
        assert res.termination == "budget"


def _phases(res) -> set[str]:
    return {s["phase"].split(":")[0] for s in res.payload["steps"]}


def test_ablations_change_what_runs(tmp_path):
    full, fb, _ = _run(tmp_path / "full", script=Script(verify=lambda t, ids: ("admit", ids[:1])
                                                        if "running" in t.split("Evidence")[0]
                                                        else ("unresolved", ids[:1])))
    assert {"perceive", "hypothesize", "verify", "collect"} <= _phases(full)
    assert {"abductive_perceive", "abductive_hypothesize", "abductive_verify"} <= set(_prompts(fb))
    assert any(n["kind"] == "evidence" and n["source"] == "tool:ocr" for n in full.payload["graph"]["nodes"])
    assert any(e["kind"] == "supports" and e["src"].startswith("e") and e["dst"].startswith("e")
               for e in full.payload["graph"]["edges"])  # tool evidence derived from the cue it followed

    nop, nb, _ = _run(tmp_path / "np", "abductive-no-perceiver")
    assert "abductive_perceive" not in _prompts(nb) and "abductive_hypothesize" in _prompts(nb)
    assert all(n["source"] != "perceive" for n in nop.payload["graph"]["nodes"] if n["kind"] == "evidence")
    assert ("hobbies", ["p1"]) in [(i.attribute, i.posts) for i in nop.inferences]

    noh, hb, _ = _run(tmp_path / "nh", "abductive-no-hypothesizer")
    assert "abductive_hypothesize" not in _prompts(hb) and _prompts(hb).count("abductive_project") == 1
    assert "abductive_verify" in _prompts(hb)  # the verifier still checks the projected candidates

    noi, ib, _ = _run(tmp_path / "ni", "abductive-no-investigator")
    assert not {"collect", "route"} & _phases(noi) and noi.payload["route_spent"] == 0
    assert "abductive_route" not in _prompts(ib)

    nov, vb, _ = _run(tmp_path / "nv", "abductive-no-verifier")
    assert "abductive_verify" not in _prompts(vb)
    assert [s["checked"] for s in nov.payload["steps"] if s["phase"] == "admit"] == [False, False]
    assert len(nov.inferences) == 2

    nog, gb, _ = _run(tmp_path / "ng", "abductive-no-graph",
                      script=Script(verify=lambda t, ids: ("unresolved", ids[:1])))
    g = nog.payload["graph"]
    assert g["flat"] and not [e for e in g["edges"] if e["src"].startswith("e") and e["dst"].startswith("e")]
    assert not any(n.get("status") == "suspended" for n in g["nodes"])
    assert "suspended" not in {s.get("status") for s in nog.payload["steps"]}
    # with the graph, the same unresolved verdicts suspend the hypotheses (until the loop ends)
    full_susp, _, _ = _run(tmp_path / "fs", script=Script(verify=lambda t, ids: ("unresolved", ids[:1])))
    assert "suspended" in {s.get("status") for s in full_susp.payload["steps"]}


COMPONENTS = ("perceiver", "hypothesizer", "investigator", "verifier", "graph")


def _ran(res, backend) -> set[str]:
    """Which of the abductive attacker's components ran in one attack."""
    prompts, phases = set(_prompts(backend)), _phases(res)
    return {c for c, on in (("perceiver", "abductive_perceive" in prompts),
                            ("hypothesizer", "abductive_hypothesize" in prompts),
                            ("investigator", bool({"route", "collect"} & phases)),
                            ("verifier", "abductive_verify" in prompts),
                            ("graph", not res.payload["graph"]["flat"])) if on}


@pytest.mark.parametrize("without", COMPONENTS)
def test_each_ablation_removes_exactly_its_component(tmp_path, without):
    """abductive-no-X: X does not run and every other component does (the paper's one-at-a-time ablation)."""
    res, backend, _ = _run(tmp_path, f"abductive-no-{without}")
    assert _ran(res, backend) == set(COMPONENTS) - {without}


def test_render_html_and_png(tmp_path):
    res, _, _ = _run(tmp_path)
    html = render_html(res.payload["graph"], title="u1 abductive")
    assert "<html" in html and "frequent_place" in html and "admitted" in html
    png = render_png(res.payload["graph"], tmp_path / "g.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# -- the real engine: the tiny random model --------------------------------------------------------

def test_end_to_end_on_the_tiny_model_is_schema_valid(tmp_path, tiny_dir):
    from localbench.serving.engines import open_backend

    backend = open_backend("tiny-random", "hf")
    try:
        user = make_user(tmp_path)
        tb = build_toolbox(user, tmp_path / "sandbox")
        ctx = _ctx(user, tb, "abductive", backend, budget=4, abductive_rounds=1, abductive_steps=3)
        ctx.calls.max_tokens = 96
        res = asyncio.run(attacker_for(ctx.condition).attack(ctx))
    finally:
        asyncio.run(backend.aclose())
    graph = GraphData.model_validate(res.payload["graph"])
    assert ctx.calls.n_calls >= len(user.posts) + 1  # every post skimmed, then one hypothesize pass at least
    model_steps = [s for s in res.payload["steps"] if s.get("prompt")]
    assert len(model_steps) == ctx.calls.n_calls
    assert all(s["ok"] == (s["failure"] is None) for s in model_steps)
    assert sum(not s["ok"] for s in model_steps) == sum(ctx.calls.failed.values())
    assert res.payload["route_spent"] <= 4 and res.termination in ("answered", "budget", "context_exhausted")
    admitted = {(n.attribute, n.value) for n in graph.nodes if n.status == "admitted"}
    assert {(i.attribute, i.value) for i in res.inferences} <= admitted
    assert all(_chain_ok(res.payload["graph"], n.id) for n in graph.nodes if n.status == "admitted")
    kinds = [e.kind for e in ctx.log.entries]
    assert kinds.count("model_call") + kinds.count("failed") == ctx.calls.n_calls
    assert kinds.count("tool_call") == kinds.count("tool_result") == \
        sum(s["phase"].startswith("collect") for s in res.payload["steps"])
    assert kinds[-1] == "inferences" and ctx.log.entries[-1].action == answer_of(res.inferences)
