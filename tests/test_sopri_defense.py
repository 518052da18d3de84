"""The post-sanitizer defense and its utility judge: real PIL masking checked with real tesseract, the
sanitizer end to end on the tiny random model, seeds that do not depend on the attacker, and the
intent judge's tasks (one required key per post) run through the judge runner."""

from __future__ import annotations

import asyncio
import json

import pytest
from fakes import ScriptedBackend
from sopri_abductive_fixtures import RECEIPT, make_user

from localbench.benchmarks.sopri.defense import mask_image, masks, sanitize_user, sanitized_payload
from localbench.benchmarks.sopri.intent import JUDGE, decode, intent_call, intent_tasks
from localbench.benchmarks.sopri.scenario import User
from localbench.benchmarks.sopri.ocr import OcrReader
from localbench.judging.runner import run_judge_tasks
from localbench.runlog import Judgment, RecordStore, Transcript
from localbench.runtime.calls import SimulationCalls
from localbench.runtime.clients import RoleClients
from localbench.serving.client import StructuredClient
from localbench.spec import load_spec


def _spec(tmp_path, **kw):
    return load_spec(None, benchmark="sopri", out=str(tmp_path / "runs"), run_id="r", conditions=["single+sanitized"],
                     **kw)


def _calls(backend, max_tokens=256) -> SimulationCalls:
    client = StructuredClient(backend, cache=None, max_retries=0)
    return SimulationCalls(RoleClients({"attacker": client, "sanitizer": client}), max_tokens=max_tokens,
                           temperatures={"attacker": 0.7, "sanitizer": 0.7})


def rewrite(req):
    """A sanitizer that generalises: valid JSON under the rewrite schema."""
    props = req.output.schema["properties"]
    n = props["alts"]["maxItems"]
    return json.dumps({"title": "A moment", "caption": "Nice day out", "tags": [],
                       "alts": ["a picture"] * n}), "stop"


def test_text_images_are_masked_so_ocr_reads_nothing(tmp_path):
    user = make_user(tmp_path)
    receipt = user.posts[1].images[0]
    reader = OcrReader()
    assert masks(user.image_path(receipt), reader) and not masks(user.image_path(user.posts[2].images[0]), reader)
    before = reader.read_file(user.image_path(receipt))
    assert "GREEN LEAF" in before.upper()  # the check can fail: tesseract reads the original
    mask_image(user.image_path(receipt), tmp_path / "masked.png")
    after = reader.read_file(tmp_path / "masked.png")
    assert not any(w in after.upper() for line in RECEIPT for w in line.split() if len(w) > 3)


def test_sanitizer_rewrites_every_post_with_seeds_of_user_and_post_only(tmp_path):
    user = make_user(tmp_path)
    spec = _spec(tmp_path)
    runs = []
    for attacker in ("single", "abductive"):  # two simulations of one user
        backend = ScriptedBackend(rewrite)
        out = asyncio.run(sanitize_user(user, None, spec, _calls(backend)))
        runs.append((out, backend))
    (a, ba), (b, bb) = runs
    assert [r.seed for r in ba.calls] == [r.seed for r in bb.calls] and len(set(r.seed for r in ba.calls)) == 3
    assert a.model_dump() == b.model_dump() and a.folder == b.folder
    assert isinstance(a, User) and User.model_validate(a.model_dump()).posts[0].caption == "Nice day out"
    assert [p.caption for p in user.posts][0].startswith("Ran 10k")  # the original is untouched
    assert a.profile == user.profile and a.folder != user.folder and str(spec.run_dir) in str(a.folder)
    rec = sanitized_payload(a)
    assert [r["post"] for r in rec] == ["p1", "p2", "p3"] and all(r["ok"] for r in rec)
    assert rec[1]["masked"] == ["p2/1"] and rec[2]["masked"] == []
    assert a.posts[1].images[0].text == "" and a.posts[1].images[0].alt == "a picture"
    assert a.image_path(a.posts[1].images[0]).read_bytes() != user.image_path(user.posts[1].images[0]).read_bytes()
    assert a.image_path(a.posts[2].images[0]).read_bytes() == user.image_path(user.posts[2].images[0]).read_bytes()
    assert sanitized_payload(user) == []


def test_the_sanitizer_sees_only_the_posts_never_the_annotations(tmp_path):
    """What a deployed sanitizer has: masking is decided on the pixels (the receipt's annotations are
    swapped to a text-less photo's and the photo's to a receipt's, and the masking does not move), and
    its prompts carry no image kind, planted text or profile value."""
    user = make_user(tmp_path)
    p2, p3 = user.posts[1], user.posts[2]
    lying = user.model_copy(update={"posts": [
        user.posts[0],
        p2.model_copy(update={"images": [p2.images[0].model_copy(update={"kind": "photo", "text": ""})]}),
        p3.model_copy(update={"images": [p3.images[0].model_copy(update={"kind": "receipt",
                                                                          "text": "GREEN LEAF CAFE"})]})]}).at(user.folder)
    backend = ScriptedBackend(rewrite)
    out = asyncio.run(sanitize_user(lying, None, _spec(tmp_path), _calls(backend)))
    rec = sanitized_payload(out)
    assert rec[1]["masked"] == ["p2/1"] and rec[2]["masked"] == []
    sent = "\n".join(m["content"] for r in backend.calls for m in r.messages)
    for secret in ("(receipt", "(photo", "GREEN LEAF CAFE", "Harbor District", "Green Leaf Cafe", "a dog called Biscuit"):
        assert secret not in sent, secret


def test_a_failed_rewrite_is_recorded_and_the_post_kept_as_written(tmp_path):
    user = make_user(tmp_path)
    out = asyncio.run(sanitize_user(user, None, _spec(tmp_path), _calls(ScriptedBackend(lambda r: ("{oops", "stop")))))
    rec = sanitized_payload(out)
    assert all(not r["ok"] and r["failure"] for r in rec)
    assert [p.caption for p in out.posts] == [p.caption for p in user.posts]
    assert rec[1]["masked"] == ["p2/1"]  # masking needs no model: it still happened


def _transcript(level: str, payload: dict, key: str = "u1|x|0", error: str | None = None) -> Transcript:
    return Transcript(key=key, scenario="u1", category="synthetic", level=level, termination="answered",
                      payload=payload, error=error)


def test_intent_tasks_have_one_required_key_per_post_and_decode_to_kept(tmp_path):
    user = make_user(tmp_path)
    spec = _spec(tmp_path)
    san = asyncio.run(sanitize_user(user, None, spec, _calls(ScriptedBackend(rewrite))))
    payload = {"sanitized_posts": sanitized_payload(san)}
    ts = [_transcript("single+sanitized", payload, "u1|single+sanitized|0"),
          _transcript("abductive+sanitized", payload, "u1|abductive+sanitized|0"),
          _transcript("single", {}, "u1|single|0"),
          _transcript("text+sanitized", payload, "u1|text+sanitized|0", error="boom")]
    store = RecordStore(tmp_path / "judgments.jsonl", Judgment)
    tasks = intent_tasks(spec, ts, {"u1": user}, store)
    assert [t.key for t in tasks] == ["u1|single+sanitized|0|intent|all", "u1|abductive+sanitized|0|intent|all"]
    schema = tasks[0].request.output.schema
    assert schema["required"] == ["p1", "p2", "p3"] and set(schema["properties"]) == {"p1", "p2", "p3"}
    assert tasks[0].meta["judge"] == JUDGE and tasks[0].request.role == "judge"
    text = tasks[0].request.messages[0]["content"]
    assert "Ran 10k along the lake" in text and "Nice day out" in text and "[text masked]" in text
    assert "single" not in text and "abductive" not in text  # template-blind
    call = intent_call(user, payload["sanitized_posts"])
    ans = {"p1": {"kept": True}, "p2": {"kept": False}, "p3": {"kept": True}}
    assert decode(call, ans) == {"kept": {"p1": True, "p2": False, "p3": True}}
    with pytest.raises(KeyError):
        decode(call, {"p1": {"kept": True}, "p2": {"kept": False}})
    with pytest.raises(ValueError):
        intent_tasks(spec, [_transcript("post+sanitized", {}, "u1|post+sanitized|0")], {"u1": user}, store)


def test_sanitizer_and_intent_judge_end_to_end_on_the_tiny_model(tmp_path, tiny_dir):
    from localbench.serving.engines import open_backend

    backend = open_backend("tiny-random", "hf")
    try:
        user = make_user(tmp_path)
        spec = _spec(tmp_path, judge_max_tokens=64)
        calls = _calls(backend, max_tokens=96)
        san = asyncio.run(sanitize_user(user, None, spec, calls))
        User.model_validate(san.model_dump())
        rec = sanitized_payload(san)
        assert [r["post"] for r in rec] == [p.id for p in user.posts]
        assert calls.n_calls == 3 and sum(not r["ok"] for r in rec) == sum(calls.failed.values())
        assert all(r["ok"] == (r["failure"] is None) for r in rec)
        assert all(san.image_path(i).is_file() for p in san.posts for i in p.images)
        store = RecordStore(tmp_path / "judgments.jsonl", Judgment)
        t = _transcript("single+sanitized", {"sanitized_posts": rec}, "u1|single+sanitized|0")
        tasks = intent_tasks(spec, [t], {"u1": user}, store)
        summary = asyncio.run(run_judge_tasks(StructuredClient(backend, cache=None, max_retries=1), tasks, store,
                                              show_progress=False))
    finally:
        asyncio.run(backend.aclose())
    assert summary.done == 1
    (j,) = store.read()
    assert j.key == "u1|single+sanitized|0|intent|all" and j.judge == JUDGE
    if j.failure is None:
        assert set(j.label["kept"]) == {"p1", "p2", "p3"} and all(isinstance(v, bool) for v in j.label["kept"].values())
    else:
        assert j.label is None  # a failed answer is recorded, never read as "kept"
    assert [x for x in intent_tasks(spec, [t], {"u1": user}, store) if x.key not in store] == []  # judged once
