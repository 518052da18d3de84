"""Judge plumbing defects found in review, each pinned by a test on fake backends.

1. Every judge call has its own store key, and the runner never lets an answer vanish.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from asb_builders import cd
from asb_fake import FakeBackend
from fakes import ScriptedBackend
from localbench.benchmarks.asb.judges import abstraction_calls
from localbench.judging.runner import JudgeTask, JudgmentNotRecorded, run_judge_tasks
from localbench.runtime.records import JsonlStore
from localbench.serving.client import StructuredClient
from localbench.serving.output import OutputSpec
from localbench.serving.types import GenerationRequest

pytestmark = pytest.mark.timeout(60)


def _msg(i: int, content: str = "x" * 200) -> dict:
    return {"kind": "message", "index": i, "sender": "health_agent", "recipients": ["social_agent"],
            "content": content}


def _transcript(scenario, messages, key="sim1"):
    return {"key": key, "scenario": scenario.id, "category": scenario.category, "level": "L0", "entries": messages}


def _judge(scenario, transcripts, client, store, judge_max_tokens=400):
    """The benchmark's judge stage (build_tasks + run_judge_tasks) on these transcripts."""
    from localbench.pipeline import judge_transcripts
    from localbench.spec import Models, RunSpec

    spec = RunSpec(models=Models(agent="fake", judge="fake"), judge_max_tokens=judge_max_tokens)
    return asyncio.run(judge_transcripts(spec, transcripts, {scenario.id: scenario}, client, store,
                                         show_progress=False))


# -- 1. one key per call ------------------------------------------------------------------------

def test_split_abstraction_group_gets_one_target_per_part():
    sc = cd()
    msgs = [_msg(i) for i in range(6)]
    calls = abstraction_calls(sc, msgs, lambda m: sum(len(x["content"]) for x in m) < 1500)
    assert len(calls) > 1
    targets = [c.target for c in calls]
    assert len(set(targets)) == len(targets), targets
    assert all(t.startswith("msgs0#") for t in targets)
    assert sorted(i for c in calls for i in c.keymap.values()) == list(range(6))
    # a group that fits keeps the plain target (the key runs judged before this change used)
    assert [c.target for c in abstraction_calls(sc, msgs, lambda m: True)] == ["msgs0"]


def test_every_abstraction_answer_of_a_split_group_is_recorded(tmp_path):
    """A context that forces the abstraction group apart: one record per call, every message scored."""
    sc = cd()
    store = JsonlStore(tmp_path / "judgments.jsonl")
    client = StructuredClient(FakeBackend(max_model_len=800), cache=None)
    summary = _judge(sc, [_transcript(sc, [_msg(i) for i in range(6)])], client, store)
    records = list(store.read())
    assert summary.done == summary.total == len(records)
    abst = [r for r in records if r["judge"] == "abstraction"]
    assert len(abst) > 1 and len({r["target"] for r in abst}) == len(abst)
    assert sorted(int(k) for r in abst for k in r["label"]["scores"]) == list(range(6))


def _task(key: str, target: str = "all") -> JudgeTask:
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"],
              "additionalProperties": False}
    req = GenerationRequest(messages=[{"role": "user", "content": "judge this"}],
                            output=OutputSpec.from_schema(schema, name="t"), role="judge", max_tokens=20, tag=key)
    return JudgeTask(key=key, request=req, decode=lambda parsed: parsed, meta={"target": target})


def test_runner_refuses_two_tasks_with_one_key_before_sending(tmp_path):
    backend = ScriptedBackend(lambda req: (json.dumps({"ok": True}), "stop"))
    store = JsonlStore(tmp_path / "j.jsonl")
    with pytest.raises(JudgmentNotRecorded, match="share the key 's|abstraction|msgs0'"):
        asyncio.run(run_judge_tasks(StructuredClient(backend), [_task("s|abstraction|msgs0", "msgs0")] * 2,
                                    store, show_progress=False))
    assert backend.calls == [] and list(store.read()) == []


def test_runner_raises_when_its_answer_cannot_be_written(tmp_path):
    """Another writer takes the key while the task runs: an error, not a silently dropped answer."""
    store = JsonlStore(tmp_path / "j.jsonl")

    def reply(req):
        store.append({"key": req.tag, "label": "someone else's"})
        return json.dumps({"ok": True}), "stop"

    with pytest.raises(JudgmentNotRecorded, match="'k1' was written by someone else"):
        asyncio.run(run_judge_tasks(StructuredClient(ScriptedBackend(reply)), [_task("k1")], store,
                                    show_progress=False))
