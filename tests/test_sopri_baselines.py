"""The paper's five baselines by its names (text-only, post-wise VLM, single agent, self-disclosure,
HolmesEye-adapted): the names resolve to localbench's attackers and are recorded as localbench's, and the
HolmesEye-adapted baseline runs its five stages (scripted), then end to end on the tiny random model."""

from __future__ import annotations

import asyncio
import json

import jsonschema
import pytest
from test_sopri_attackers import _check_transcripts, clients_for, play, spec_for
from test_sopri_tools import make_user
from typer.testing import CliRunner

from localbench.benchmarks.sopri.attack import ATTACKERS, PAPER_NAMES, Condition, profile_schema
from localbench.benchmarks.sopri.design import DESIGN
from localbench.benchmarks.sopri.simulate import SopriSimulator
from localbench.cli import app
from localbench.runtime.harness import simulate_scenarios

ANSWER = {"pets": {"value": "a dog named Biscuit", "posts": ["p1"], "evidence": "vet receipt"}}


@pytest.fixture()
def user(tmp_path):
    return make_user(tmp_path / "suite")


def test_the_papers_names_resolve_to_localbench_attackers_and_are_recorded_as_ours(tmp_path):
    assert PAPER_NAMES == {"text-only": "text", "post-wise-vlm": "post", "single-agent": "single",
                           "self-disclosure": "selfdisc", "holmeseye-adapted": "holmeseye"}
    assert all(v in ATTACKERS for v in PAPER_NAMES.values())
    assert Condition.parse("holmeseye-adapted+sanitized") == Condition("holmeseye", (), "sanitized")
    assert Condition.parse("single-agent").attacker == "single"
    spec = spec_for(tmp_path, ["text-only", "post-wise-vlm", "self-disclosure+sanitized", "holmeseye"])
    assert spec.conditions == ["text", "post", "selfdisc+sanitized", "holmeseye"]
    assert "holmeseye" in DESIGN.condition.default


def test_run_help_says_which_attacker_is_which_baseline_of_the_paper():
    res = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "300"}, terminal_width=300)
    text = " ".join(res.output.replace("│", " ").split())
    for paper, ours in PAPER_NAMES.items():
        assert f"{ours} (paper: {paper})" in text, (ours, paper)


def _holmeseye_reply(req):
    name = req.output.name
    if name == "holmeseye_extract":
        return json.dumps({"observations": [{"cue": "a vet receipt", "supports": ["pets"]}], "notes": ""}), "stop"
    if name == "holmeseye_inter":
        return json.dumps({"patterns": [], "notes": "nothing shared"}), "stop"
    if name == "holmeseye_summary":
        return json.dumps({"profile": ANSWER, "questions": [
            {"attribute": "pets", "question": "What is the pet's name?", "images": ["p1/1"]},
            {"attribute": "home", "question": "Which station is near home?", "images": []}]}), "stop"
    if name == "holmeseye_inquiry":
        return json.dumps({"answers": [{"image": "p1/1", "answer": "Biscuit"}], "conclusion": "Biscuit"}), "stop"
    return json.dumps(ANSWER), "stop"


def test_holmeseye_runs_its_five_stages_with_one_model(user, tmp_path):
    t, backend = play(user, "holmeseye-adapted", _holmeseye_reply, tmp_path)
    names = [r.output.name for r in backend.calls]
    # three images alone, one group of three, the summary, a question to its one image and one that names no
    # image to all three, the decision
    assert names == ["holmeseye_extract"] * 3 + ["holmeseye_inter", "holmeseye_summary"] + ["holmeseye_inquiry"] * 2 \
        + ["profile"]
    assert t.termination == "answered" and t.payload["profile"] == ANSWER and t.condition == "holmeseye-adapted"
    extract = [r.messages[1]["content"] for r in backend.calls[:3]]
    assert "[Image p1/1]" in extract[0] and "[Image p2/1]" not in extract[0] and "HAPPY PAWS" in extract[0].upper()
    inquiry = backend.calls[5].messages[1]["content"]
    assert "What is the pet's name?" in inquiry and "[Image p1/1]" in inquiry and "[Image p2/1]" not in inquiry
    assert backend.calls[5].output.schema["properties"]["answers"]["items"]["properties"]["image"] == {"enum": ["p1/1"]}
    assert all(f"[Image {i}]" in backend.calls[6].messages[1]["content"] for i in ("p1/1", "p2/1", "p2/2"))
    decide = backend.calls[7].messages[1]["content"]
    assert "Biscuit" in decide and "What is the pet's name?" in decide  # the inquiry's answers reach the decision
    assert "Which station is near home?" in decide
    summary = backend.calls[4].output.schema
    assert summary["properties"]["questions"]["maxItems"] == 3
    assert summary["properties"]["questions"]["items"]["properties"]["images"]["items"] == {
        "enum": ["p1/1", "p2/1", "p2/2"]}
    assert set(t.payload["stages"]) == {"extract", "inter", "summarize", "inquiry"}


def test_holmeseye_on_a_vlm_sends_each_image_as_pixels_only_to_the_image_stages(user, tmp_path):
    from localbench.serving.messages import has_images

    t, backend = play(user, "holmeseye", _holmeseye_reply, tmp_path, vision=True)
    pixels = {r.output.name: has_images(r.messages) for r in backend.calls}
    assert pixels == {"holmeseye_extract": True, "holmeseye_inter": True, "holmeseye_inquiry": True,
                      "holmeseye_summary": False, "profile": False}
    first = backend.calls[0].messages[1]["content"]
    assert sum(part["type"] == "image" for part in first) == 1  # one image alone
    assert t.payload["image_input"] == "pixels"


def test_the_preflight_compiles_every_holmeseye_stage(user, tmp_path):
    """The run's preflight sends each stage's schema (here compiled by xgrammar, as the engines do)."""
    import xgrammar as xgr

    from localbench.benchmarks.sopri.preflight import preflight_outputs

    plain = preflight_outputs(spec_for(tmp_path, ["single"]), [user])["attacker"]
    assert "holmeseye_extract" not in {o.name for o in plain}
    outputs = preflight_outputs(spec_for(tmp_path, ["single", "holmeseye-adapted"]), [user])["attacker"]
    assert {"holmeseye_extract", "holmeseye_inter", "holmeseye_summary", "holmeseye_inquiry"} <= {o.name for o in outputs}
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo([chr(c) for c in range(32, 127)]))
    for o in outputs:
        compiler.compile_json_schema(json.dumps(o.schema), any_whitespace=False)


def test_holmeseye_without_images_and_with_a_failed_decision(tmp_path):
    bare = make_user(tmp_path / "bare", images=False)
    t, backend = play(bare, "holmeseye", lambda req: (json.dumps({"profile": ANSWER}) if
                                                      req.output.name == "holmeseye_summary" else "not json", "stop"),
                      tmp_path)
    assert [r.output.name for r in backend.calls] == ["holmeseye_summary", "profile"]
    assert "questions" not in backend.calls[0].output.schema["properties"]
    assert t.termination == "no_answer" and t.payload["answered"] is False and t.payload["profile"] == {}


def test_holmeseye_end_to_end_on_the_tiny_model_gives_a_schema_valid_profile(user, tiny_dir, tmp_path):
    """Every stage's grammar compiles and decodes on a real engine (one image, to keep it short)."""
    from localbench.serving.engines import open_backend

    posts = [p.model_copy(update={"images": p.images[:1] if p.id == "p1" else []}) for p in user.posts]
    user = user.model_copy(update={"posts": posts}).at(user.folder)
    backend = open_backend("tiny-random", "hf")
    try:
        spec = spec_for(tmp_path, ["holmeseye-adapted"], answer_tokens=200)
        summary = asyncio.run(simulate_scenarios(spec, SopriSimulator(), [user], clients_for(backend, 1),
                                                 tmp_path / "run", progress=False))
    finally:
        asyncio.run(backend.aclose())
    (rec,) = _check_transcripts(tmp_path / "run", user)
    assert summary.errors == 0 and rec["condition"] == "holmeseye"
    steps = [e["meta"]["step"] for e in rec["entries"] if e["kind"] in ("model_call", "failed")]
    assert steps[:3] == ["extract 1", "inter 1", "summarize"] and steps[-1] == "decide", steps
    jsonschema.validate(rec["payload"]["profile"], profile_schema([p.id for p in user.posts], user.taxonomy))
    print(rec["termination"], rec["n_calls"], rec["n_failed_turns"])
