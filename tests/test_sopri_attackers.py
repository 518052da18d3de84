"""SopriBench's baseline attackers and simulator: the logic on scripted replies, then every attacker
end to end through the shared harness on the tiny random model (xgrammar-constrained), and the
image path on the tiny random VLM."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import jsonschema
import pytest
from fakes import ScriptedBackend
from test_sopri_tools import make_user
from vlm_helpers import VLM

from localbench.benchmarks.sopri.attack import profile_schema
from localbench.benchmarks.sopri.simulate import SopriSimulator
from localbench.benchmarks.sopri.tools import build_toolbox, sandbox_for
from localbench.runlog import Transcript
from localbench.runtime.clients import RoleClients
from localbench.runtime.harness import Unit, simulate_scenarios
from localbench.serving.client import StructuredClient
from localbench.serving.messages import has_images
from localbench.spec import SpecError, load_spec

REPO = Path(__file__).resolve().parent.parent
ANSWER = {"pets": {"value": "a dog named Biscuit", "posts": ["p1"], "evidence": "vet receipt"}}


def spec_for(tmp_path, levels, **extra):
    return load_spec(None, benchmark="sopri", conditions=levels, out=str(tmp_path), run_id="r",
                     max_rounds={"synthetic": extra.pop("max_rounds", 4)},
                     extra={"max_inferences": 3, "answer_tokens": 320, **extra})


def clients_for(backend, retries: int = 0) -> RoleClients:
    client = StructuredClient(backend, cache=None, max_retries=retries)
    return RoleClients({"attacker": client, "sanitizer": client})


def play(user, level, reply, tmp_path, vision: bool = False, **extra) -> tuple[Transcript, ScriptedBackend]:
    backend = ScriptedBackend(reply)
    if vision:
        backend.accepts_images = True
    spec = spec_for(tmp_path, [level], **extra)
    unit = Unit(user.id, user.cohort, level, 0, task=user)
    return asyncio.run(SopriSimulator().play(unit, clients_for(backend), spec)), backend


@pytest.fixture()
def user(tmp_path):
    return make_user(tmp_path / "suite")


def _is_step(req) -> bool:
    return "anyOf" in req.output.schema


# -- scripted replies: the logic --------------------------------------------------------------------

def test_single_agent_calls_tools_then_answers_and_counts_the_route(user, tmp_path):
    replies = iter([{"tool": "ocr", "args": {"image": "p1/1"}}, {"tool": "gazetteer", "args": {"name": "Maple Ct"}},
                    ANSWER])
    t, backend = play(user, "single", lambda req: (json.dumps(next(replies)), "stop"), tmp_path)
    assert t.termination == "answered" and t.payload["answered"] is True
    assert t.payload["route_spent"] == 3 and t.payload["tool_calls"] == 2
    assert t.payload["profile"] == ANSWER and t.payload["image_input"] == "ocr-text"
    kinds = [e.kind for e in t.entries]
    assert kinds == ["model_call", "tool_call", "tool_result", "model_call", "tool_call", "tool_result", "model_call",
                     "inferences"]
    results = [e.content for e in t.entries if e.kind == "tool_result"]
    assert "HAPPY PAWS" in results[0].upper() and "Avalonia > North Vale > Eastport > Elmwood" in results[1]
    # each tool result reaches the next prompt as the answer to the model's own call
    last = backend.calls[-1].messages
    assert [m["role"] for m in last] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert json.loads(last[2]["content"])["tool"] == "ocr" and "Maple Court (compound)" in last[5]["content"]
    assert all(_is_step(r) for r in backend.calls)
    assert "gazetteer (cost 1)" in last[0]["content"] and "a dog named Biscuit" not in last[1]["content"]
    assert t.n_calls == 3 and t.rounds == 3 and t.max_rounds == 4


def test_single_agent_is_forced_to_answer_at_the_round_limit_and_a_failed_answer_is_not_answered(user, tmp_path):
    def reply(req):
        if _is_step(req):
            return json.dumps({"tool": "search", "args": {"query": "vet clinic"}}), "stop"
        return '{"pets": {"value": "a dog', "length"  # cut off: fails validation

    t, backend = play(user, "single", reply, tmp_path, max_rounds=3)
    assert [_is_step(r) for r in backend.calls] == [True, True, False]
    assert "No steps are left" in backend.calls[-1].messages[-1]["content"]
    assert t.termination == "no_answer" and t.payload["answered"] is False and t.payload["profile"] == {}
    assert t.payload["route_spent"] == 4 and t.n_failed_turns == 1 and t.failed_by_role == {"attacker": 1}
    assert [e.kind for e in t.entries][-2:] == ["failed", "inferences"]
    assert t.entries[-1].meta == {"answered": False} and "failed" in t.entries[-1].content


def test_the_route_budget_bounds_the_tools_offered(user, tmp_path):
    def offered(req) -> set[str]:
        return {b["properties"]["tool"]["const"] for b in req.output.schema.get("anyOf", []) if "tool" in b["properties"]}

    def reply(req):
        if "ocr" in offered(req):
            return json.dumps({"tool": "ocr", "args": {"image": "p2/1"}}), "stop"
        if "crop" in offered(req):
            return json.dumps({"tool": "crop", "args": {"image": "p2/1", "box": [0, 0, 1, 0.5], "zoom": 2}}), "stop"
        return json.dumps(ANSWER), "stop"

    t, backend = play(user, "single", reply, tmp_path, route_budget=3, max_rounds=8)
    # 3 units: every tool; after ocr (2) only the 1-unit tools; after crop nothing, so the answer is forced
    assert [offered(r) for r in backend.calls] == [{"ocr", "crop", "gazetteer", "search"}, {"crop", "gazetteer"}, set()]
    assert not _is_step(backend.calls[-1]) and "No steps are left" in backend.calls[-1].messages[-1]["content"]
    assert t.termination == "answered" and t.payload["route_spent"] == 3 and t.payload["tool_calls"] == 2


def test_a_small_window_drops_old_tool_results_then_the_earliest_posts(user, tmp_path):
    replies = [{"tool": "search", "args": {"query": "vet clinic vaccination"}}, ANSWER]

    def reply(req):
        return json.dumps(replies[0] if len(req.messages) == 2 else replies[1]), "stop"

    _, wide = play(user, "single", reply, tmp_path)
    first, second = (wide.count_tokens(r.messages) for r in wide.calls)
    # a window that holds the first prompt but not the second (the first tool result is what is dropped)
    backend = ScriptedBackend(lambda req: (json.dumps(replies[min(len(backend.calls), 2) - 1]), "stop"))
    backend.max_model_len = first + 320 + 8 + 20  # room for the note that says so
    spec = spec_for(tmp_path, ["single"])
    t = asyncio.run(SopriSimulator().play(Unit(user.id, user.cohort, "single", 0, task=user), clients_for(backend), spec))
    assert second > first + 20 and t.termination == "answered"
    cut = backend.calls[1].messages
    assert len(cut) == 2 and "1 earlier tool calls and their results left out" in cut[1]["content"]
    assert "=== Post p1 ===" in cut[1]["content"] and t.n_context_cuts == 1
    # a window that cannot hold every post: the earliest go, and the header says so
    backend.calls.clear()
    backend.max_model_len = first + 320 + 8 - 30
    t2 = asyncio.run(SopriSimulator().play(Unit(user.id, user.cohort, "single", 0, task=user), clients_for(backend),
                                           spec))
    opening = backend.calls[0].messages[1]["content"]
    assert "=== Post p1 ===" not in opening and "=== Post p3 ===" in opening and "left out here to fit" in opening
    assert t2.context_cuts[0]["dropped"] >= 1 and not t2.context_cuts[0]["exhausted"]


def test_text_attacker_sees_every_post_once_and_a_failed_answer_is_a_failure(user, tmp_path):
    t, backend = play(user, "text", lambda req: ("not json", "stop"), tmp_path)
    [req] = backend.calls
    prompt = req.messages[1]["content"]
    assert all(f"=== Post {p} ===" in prompt for p in ("p1", "p2", "p3")) and "Rabies vaccine" not in prompt
    assert req.output.schema == profile_schema(["p1", "p2", "p3"], user.taxonomy)
    assert t.termination == "no_answer" and not t.payload["answered"] and t.payload["profile"] == {}
    assert t.payload["image_input"] == "none" and t.payload["condition"]["attacker"] == "text"


def test_text_attacker_gets_post_text_and_no_image_content_of_any_kind(user, tmp_path):
    """The paper's TextLLM (Appendix B): caption, hashtags, time and IP region; no pixels, alt text,
    OCR or other metadata, even on a VLM, and no tools."""
    for vision in (False, True):
        t, backend = play(user, "text", lambda req: (json.dumps(ANSWER), "stop"), tmp_path, vision=vision)
        [req] = backend.calls
        prompt = req.messages[1]["content"]
        assert isinstance(prompt, str) and not has_images(req.messages)
        for p in user.posts:
            assert p.caption in prompt and p.timestamp in prompt and all(tag in prompt for tag in p.tags)
            assert not p.ip_region or p.ip_region in prompt
            for im in p.images:
                assert (not im.alt or im.alt not in prompt) and "OCR" not in prompt
                assert not any(line in prompt for line in im.text.splitlines() if len(line) > 6)
            assert not any(f"{k}: {v}" in prompt for k, v in p.metadata.items())
        assert "tool" not in json.dumps(req.output.schema) and t.payload["image_input"] == "none"


def test_post_attacker_reads_each_post_alone_then_merges(user, tmp_path):
    def reply(req):
        if req.tag.endswith("aggregate"):
            return json.dumps(ANSWER), "stop"
        if req.tag.endswith("read p2"):
            return "{", "length"
        post = req.tag.split()[-1]
        return json.dumps({"routine": {"value": f"seen in {post}", "posts": [post], "evidence": ""}}), "stop"

    t, backend = play(user, "post", reply, tmp_path)
    reads = [r for r in backend.calls if " read " in r.tag]
    assert len(reads) == 3 and all(r.output.schema["properties"]["routine"]["properties"]["posts"]
                                   ["items"]["enum"] == [r.tag.split()[-1]] for r in reads)
    assert "=== Post p3 ===" in reads[2].messages[1]["content"] and "Post p1" not in reads[2].messages[1]["content"]
    agg = backend.calls[-1].messages[1]["content"]
    assert "Post p1:\n- routine: seen in p1" in agg and "seen in p3" in agg and "Post p2:" not in agg
    assert t.payload["failed_posts"] == ["p2"] and t.payload["per_post"]["p2"] is None
    assert t.termination == "answered" and t.payload["profile"] == ANSWER


def test_selfdisc_names_carriers_and_records_images_by_file(user, tmp_path):
    def reply(req):
        if req.tag.endswith("aggregate"):
            return json.dumps(ANSWER), "stop"
        post = req.tag.split()[-1]
        carriers = req.output.schema["properties"]["disclosures"]["items"]["properties"]["carrier"]["enum"]
        return json.dumps({"disclosures": [{"attribute": "home", "value": "Elmwood", "carrier": carriers[-1],
                                            "evidence": post}]}), "stop"

    t, backend = play(user, "selfdisc", reply, tmp_path)
    per_post = t.payload["per_post"]
    assert per_post["p1"]["disclosures"][0]["carrier"] == "image:receipt.png"
    assert per_post["p2"]["disclosures"][0]["carrier"] == "image:park.png"
    assert per_post["p3"]["disclosures"][0]["carrier"] == "timestamp" or per_post["p3"]["disclosures"][0][
        "carrier"] in ("tags", "timestamp")
    assert "[in image:p1/1]" in backend.calls[-1].messages[1]["content"] and t.payload["answered"]


def test_a_vlm_gets_pixels_and_a_text_model_gets_ocr_text(user, tmp_path):
    reply = lambda req: (json.dumps(ANSWER if "aggregate" in req.tag else {}), "stop")
    t, backend = play(user, "post", reply, tmp_path, vision=True)
    with_images = [r.tag for r in backend.calls if has_images(r.messages)]
    assert with_images == [f"{user.id}|post|0 read p1", f"{user.id}|post|0 read p2"]
    assert t.payload["image_input"] == "pixels"
    t2, backend2 = play(user, "text", reply, tmp_path, vision=True)  # the text attacker sees no image even on a VLM
    assert not any(has_images(r.messages) for r in backend2.calls) and t2.payload["image_input"] == "none"
    assert "(the image is attached below)" not in backend2.calls[0].messages[1]["content"]
    # the single agent's crop comes back as pixels to a VLM
    steps = iter([{"tool": "crop", "args": {"image": "p2/1", "box": [0, 0, 0.6, 0.35], "zoom": 2}}, ANSWER])
    t3, backend3 = play(user, "single", lambda req: (json.dumps(next(steps)), "stop"), tmp_path, vision=True)
    last = backend3.calls[-1].messages[-1]["content"]
    assert [p["type"] for p in last] == ["text", "image"] and last[1]["mime_type"] == "image/png"
    assert "ELMWOOD STATION" in last[0]["text"] and t3.payload["image_input"] == "pixels"


def test_simulator_refuses_unknown_conditions_naming_the_field(tmp_path):
    sim = SopriSimulator()
    with pytest.raises(SpecError, match="field 'conditions'.*unknown attacker 'sage'"):
        sim.check(spec_for(tmp_path, ["single", "sage"]))
    with pytest.raises(SpecError, match="extra.route_budget"):
        sim.check(spec_for(tmp_path, ["single"], route_budget=-1))
    sim.check(spec_for(tmp_path, ["single", "abductive-no-verifier", "text+sanitized"]))


def test_images_are_read_before_the_simulations_start_and_once_across_runs(user, tmp_path, monkeypatch):
    """The harness's preparation reads every image a text model will see as OCR text before any
    simulation starts (so tesseract does not compete with the engine mid-run); a later run over the
    same images reads none of them again; no tesseract at all stops the run before anything is written."""
    from localbench.benchmarks.sopri import ocr
    from localbench.errors import UserError

    monkeypatch.setenv("LOCALBENCH_CACHE", str(tmp_path / "cache"))
    n_images = sum(len(p.images) for p in user.posts)
    seen_at_start: list[int] = []

    class Watching(SopriSimulator):
        async def play(self, unit, clients, spec):
            seen_at_start.append(self.reader.runs)
            return await super().play(unit, clients, spec)

    def run(run_id: str, levels: list[str]) -> tuple[Watching, object]:
        sim = Watching()
        spec = load_spec(None, benchmark="sopri", conditions=levels, out=str(tmp_path), run_id=run_id,
                         extra={"max_inferences": 3, "answer_tokens": 320})
        backend = ScriptedBackend(lambda req: (json.dumps(ANSWER if "aggregate" in req.tag
                                                          else {"disclosures": []} if "disclosures" in json.dumps(
                                                              req.output.schema) else {}), "stop"))
        return sim, asyncio.run(simulate_scenarios(spec, sim, [user], clients_for(backend), spec.run_dir,
                                                   progress=False))

    sim, summary = run("first", ["post", "selfdisc"])
    assert summary.done == 2 and summary.errors == 0 and summary.prepare_s > 0
    assert sim.reader.runs == n_images and seen_at_start == [n_images, n_images]  # all read before either began
    assert len(list((tmp_path / "cache" / "ocr").glob("*.txt"))) == n_images
    sim, summary = run("second", ["post"])
    assert summary.done == 1 and sim.reader.runs == 0  # a later run: every image from the disk cache

    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    ocr.tesseract_version.cache_clear()
    try:
        with pytest.raises(UserError, match=rf"{n_images} images of 1 users as OCR text.*tesseract-ocr"):
            run("third", ["post"])
    finally:
        ocr.tesseract_version.cache_clear()
    assert not (tmp_path / "third" / "transcripts.jsonl").exists()


# -- the tiny random model, through the shared harness ----------------------------------------------

@pytest.fixture(scope="module")
def tiny_backend(tiny_dir):
    from localbench.serving.engines import open_backend

    backend = open_backend("tiny-random", "hf")
    yield backend
    asyncio.run(backend.aclose())


def _check_transcripts(run: Path, user) -> list[dict]:
    recs = [json.loads(x) for x in (run / "transcripts.jsonl").read_text().splitlines()]
    box = build_toolbox(user, sandbox_for(user))
    profile = profile_schema([p.id for p in user.posts], user.taxonomy)
    for t in recs:
        assert t["error"] is None, t["traceback"]
        assert t["termination"] in ("answered", "no_answer", "context_exhausted") and t["n_calls"] >= 1
        p = t["payload"]
        jsonschema.validate(p["profile"], profile)
        assert p["answered"] == (t["termination"] == "answered")
        assert p["answered"] or p["profile"] == {}
        for e in t["entries"]:
            if e["kind"] == "model_call":
                assert e["call"]["failure"] is None and e["action"] is not None
            if e["kind"] == "tool_call":
                jsonschema.validate(e["action"], box.call_schema())
            if e["kind"] == "failed":
                assert e["meta"]["failure"]
        assert sum(e["kind"] == "failed" and e["call"] is not None for e in t["entries"]) == t["n_failed_turns"]
    return recs


def test_every_attacker_end_to_end_on_the_tiny_model(user, tiny_backend, tmp_path):
    levels = ["single", "text", "post", "selfdisc"]
    spec = spec_for(tmp_path, levels, max_rounds=3, answer_tokens=400)
    summary = asyncio.run(simulate_scenarios(spec, SopriSimulator(), [user], clients_for(tiny_backend, 1),
                                             tmp_path / "run", progress=False))
    recs = _check_transcripts(tmp_path / "run", user)
    assert summary.errors == 0 and sorted(r["condition"] for r in recs) == sorted(levels)
    # grammar-constrained nonsense is still valid: a broken decoding path would fail every call
    assert sum(r["payload"]["answered"] for r in recs) >= 3
    by = {r["condition"]: r for r in recs}
    assert by["post"]["n_calls"] == by["selfdisc"]["n_calls"] == 4  # three posts, one aggregation
    assert by["single"]["n_calls"] <= 3 and by["text"]["n_calls"] == 1
    assert all(r["payload"]["image_input"] == ("none" if r["condition"] == "text" else "ocr-text") for r in recs)
    spec_yaml = (tmp_path / "run" / "spec.yaml").read_text()
    assert "tesseract" in spec_yaml and "prompt_set" in spec_yaml


def test_the_abductive_attacker_through_the_simulator_draws_its_graph(user, tiny_backend, tmp_path):
    """Its graph is saved in the transcript and drawn for audit (HTML, PNG) in the run directory."""
    spec = spec_for(tmp_path, ["abductive"], max_rounds=2, answer_tokens=400)
    summary = asyncio.run(simulate_scenarios(spec, SopriSimulator(), [user], clients_for(tiny_backend, 1),
                                             spec.run_dir, progress=False))
    (rec,) = _check_transcripts(spec.run_dir, user)
    assert summary.errors == 0 and {n["kind"] for n in rec["payload"]["graph"]["nodes"]} >= {"post"}
    files = rec["payload"]["graph_files"]
    assert files == [f"graphs/{user.id}-abductive-0.html", f"graphs/{user.id}-abductive-0.png"]
    html = (spec.run_dir / files[0]).read_text()
    nodes = rec["payload"]["graph"]["nodes"]
    drawn = sum(n["kind"] in ("evidence", "hypothesis") for n in nodes)
    assert f"{user.id} · abductive" in html and html.count("<tr>") == drawn + 2  # a row a node, two headers
    assert (spec.run_dir / files[1]).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_sanitized_simulation_carries_what_the_utility_judge_needs(user, tiny_backend, tmp_path):
    """Through the simulator and into the judge stage's planning: the rewrite travels in the transcript."""
    from localbench.benchmarks.sopri.judge_stage import build_tasks
    from localbench.runlog import Judgment, RecordStore, Transcript

    spec = spec_for(tmp_path, ["text+sanitized"], answer_tokens=400)
    summary = asyncio.run(simulate_scenarios(spec, SopriSimulator(), [user], clients_for(tiny_backend, 1),
                                             spec.run_dir, progress=False))
    assert summary.errors == 0
    (t,) = RecordStore(spec.run_dir / "transcripts.jsonl", Transcript).read()
    assert [p["post"] for p in t.payload["sanitized_posts"]] == [p.id for p in user.posts]
    store = RecordStore(tmp_path / "judgments.jsonl", Judgment)
    tasks = build_tasks(spec, [t], {user.id: user}, StructuredClient(tiny_backend, cache=None), store)
    (intent,) = [x for x in tasks if x.meta["judge"] == "intent"]
    assert intent.request.output.schema["required"] == [p.id for p in user.posts]


def test_the_image_path_on_the_tiny_vlm(user, tmp_path):
    from localbench.serving.engines import open_backend

    backend = open_backend(VLM, "hf")
    try:
        assert getattr(backend, "accepts_images", False)
        spec = spec_for(tmp_path, ["post", "single"], max_rounds=2)
        summary = asyncio.run(simulate_scenarios(spec, SopriSimulator(), [user], clients_for(backend, 1),
                                                 tmp_path / "run", progress=False))
    finally:
        asyncio.run(backend.aclose())
    recs = _check_transcripts(tmp_path / "run", user)
    assert summary.errors == 0 and all(r["payload"]["image_input"] == "pixels" for r in recs)
