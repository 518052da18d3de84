"""Judge plumbing, each contract pinned by a test on fake backends.

1. Every judge call has its own store key, and the runner never lets an answer vanish.
2. A prompt too long for the judge's context is a recorded failure, never sent, never scored as
   "no leak" or "task not done", and never an exception that aborts the judge stage.
3. Rerunning a gold eval into the same directory with settings that change answers is refused.
4. eval.json and rejudge.json say which model judged (backend identity) with which rubrics (hashes).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from asb_builders import cd
from asb_fake import FakeBackend
from fakes import ScriptedBackend
from localbench.benchmarks.asb.judges import abstraction_calls, task_call
from localbench.judging.runner import JudgeTask, JudgmentNotRecorded, answer_record, run_judge_tasks
from localbench.runlog import JsonlStore, Judgment, LogEntry, RecordStore, Transcript
from localbench.serving.client import StructuredClient
from localbench.serving.output import OutputSpec
from localbench.serving.types import GenerationRequest, ModelIdentity, check_prompt_fits

pytestmark = pytest.mark.timeout(60)


def _msg(i: int, content: str = "x" * 200) -> dict:
    return {"kind": "message", "index": i, "sender": "health_agent", "recipients": ["social_agent"],
            "content": content}


def _transcript(scenario, messages, key="sim1"):
    entries = [LogEntry(**{"index": i, "round": 0, **m}) for i, m in enumerate(messages)]
    return Transcript(key=key, scenario=scenario.id, category=scenario.category, level="L0", entries=entries,
                      termination="idle")


def _judge(scenario, transcripts, client, store, judge_max_tokens=400):
    """The benchmark's judge stage (build_tasks + run_judge_tasks) on these transcripts."""
    from localbench.pipeline import judge_transcripts
    from localbench.spec import RunSpec

    spec = RunSpec(models={"agent": "fake", "judge": "fake"}, judge_max_tokens=judge_max_tokens)
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
    store = RecordStore(tmp_path / "judgments.jsonl", Judgment)
    client = StructuredClient(FakeBackend(max_model_len=800), cache=None)
    summary = _judge(sc, [_transcript(sc, [_msg(i) for i in range(6)])], client, store)
    records = [r.model_dump() for r in store.read()]
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
                                    store, show_progress=False, record_of=answer_record))
    assert backend.calls == [] and list(store.read()) == []


def test_runner_raises_when_its_answer_cannot_be_written(tmp_path):
    """Another writer takes the key while the task runs: an error, not a silently dropped answer."""
    store = JsonlStore(tmp_path / "j.jsonl")

    def reply(req):
        store.append({"key": req.tag, "label": "someone else's"})
        return json.dumps({"ok": True}), "stop"

    with pytest.raises(JudgmentNotRecorded, match="'k1' was written by someone else"):
        asyncio.run(run_judge_tasks(StructuredClient(ScriptedBackend(reply)), [_task("k1")], store,
                                    show_progress=False, record_of=answer_record))


# -- 2. prompts too long for the judge's context ------------------------------------------------

class StrictBackend(FakeBackend):
    """Refuses a prompt that does not fit, as the hf and vllm engines do (PromptTooLongError)."""

    async def complete(self, request):
        check_prompt_fits(self.count_tokens(request.messages), request, self.max_model_len, self.identity.preset)
        return await super().complete(request)


def test_task_judge_never_trims_to_no_messages():
    sc = cd()
    msgs = [_msg(i) for i in range(7)]
    call = task_call(sc, msgs, lambda m: False)  # not even the last message fits
    assert call.n_messages == 1 and call.truncated == 6  # not 0: that would be labelled by rule, TCQ 0
    assert "[6]" in call.messages[-1]["content"]
    assert task_call(sc, [], lambda m: False).n_messages == 0  # truly no messages: the rule label is right


def test_a_message_too_long_for_the_judge_is_a_recorded_failure(tmp_path):
    from localbench.benchmarks.asb.metrics import simulation_metrics

    sc = cd()
    # the last message alone exceeds the context: the task judge (which keeps the latest) cannot fit it
    msgs = [_msg(0), _msg(1), _msg(2), _msg(3, "y" * 8000)]
    backend = StrictBackend(max_model_len=1500)
    store = RecordStore(tmp_path / "judgments.jsonl", Judgment)
    summary = _judge(sc, [_transcript(sc, msgs)], StructuredClient(backend, cache=None), store)
    judgments = list(store.read())
    records = [r.model_dump() for r in judgments]
    assert summary.done == summary.total == len(records)
    refused = [r for r in records if r["failure"] and "does not fit" in r["failure"]]
    judges = {r["judge"] for r in refused}
    assert {"privacy", "task", "abstraction", "behaviour"} <= judges, judges
    assert summary.too_long == len(refused) and summary.failed >= len(refused)
    assert all(r["label"] is None and r["call"] is None for r in refused)
    sent = {req.tag for req in backend.requests}
    assert sent and not sent & {r["key"] for r in refused}  # never sent
    m = simulation_metrics(sc, judgments)
    assert {"CDLR", "TCQ", "Task%", "IAS"} <= set(m.failed)  # failed, not "no leak" / TCQ 0
    assert m.values.get("CDLR") is None and m.values.get("TCQ") is None


def test_gold_eval_counts_prompts_too_long_as_failures_without_sending(tmp_path):
    from localbench.benchmarks.asb.judges import ItemLeakJudge
    from localbench.benchmarks.asb.loaders import load_scenarios
    from localbench.benchmarks.asb.planting import build_gold
    from localbench.judging.gold_eval import EvalConfig, load_eval, run_eval
    from localbench.judging.gold import write_gold

    items = build_gold(load_scenarios("builtin", ["CD"], limit=1).scenarios, seed=0, methods=["verbatim"])
    gold = write_gold(tmp_path / "gold.jsonl", items)
    backend = StrictBackend(max_model_len=300, name="small")
    cfg = EvalConfig(judges=["small"], batch=False)  # one item per call: each too long on its own
    summaries = asyncio.run(run_eval(gold, tmp_path / "ev", cfg, ItemLeakJudge(),
                                     clients={"small": StructuredClient(backend, cache=None)}, show_progress=False))
    s = summaries["small"]
    assert s.total == s.failed == s.too_long == len(items) and backend.requests == []
    data = load_eval(tmp_path / "ev")
    assert all("does not fit" in r["failure"] for r in data.records) and data.failures("small") == len(items)


def test_a_prompt_is_tokenized_once_when_built_and_when_run(tmp_path):
    """The runner's context check reuses the count made when the call was built (no second /tokenize)."""
    from judges_helpers import minimal

    sc = cd()
    backend = ScriptedBackend(lambda req: (json.dumps(minimal(req.output.schema)), "stop"))
    counted = []
    real = backend.count_tokens

    def count(messages):
        counted.append(json.dumps(messages, sort_keys=True))
        return real(messages)

    backend.count_tokens = count
    _judge(sc, [_transcript(sc, [_msg(i) for i in range(3)])], StructuredClient(backend, cache=None),
           RecordStore(tmp_path / "j.jsonl", Judgment))
    assert len(backend.calls) == 4 and len(counted) == len(set(counted)) == 4


# -- 3. a gold eval's settings must match on rerun ----------------------------------------------

def _gold(tmp_path):
    from localbench.benchmarks.asb.loaders import load_scenarios
    from localbench.benchmarks.asb.planting import build_gold
    from localbench.judging.gold import write_gold

    items = build_gold(load_scenarios("builtin", ["CD"], limit=1).scenarios, seed=0, methods=["verbatim", "absent"])
    return write_gold(tmp_path / "gold.jsonl", items)


def _eval(gold, out, judges, rubric_files=(), revision="1", **settings):
    from judges_helpers import scripted_judge
    from localbench.benchmarks.asb.judges import ItemLeakJudge
    from localbench.judging.gold_eval import EvalConfig, run_eval

    clients = {j: scripted_judge(lambda req, k, text: "none", j) for j in judges}
    for c in clients.values():
        c.backend.identity = type(c.backend.identity)(preset=c.backend.identity.preset, source="test",
                                                      revision=revision)
    return asyncio.run(run_eval(gold, out, EvalConfig(judges=list(judges), **settings), ItemLeakJudge(),
                                clients=clients, show_progress=False, rubric_files=rubric_files))


def test_adding_a_judge_with_the_same_settings_resumes(tmp_path):
    gold, out = _gold(tmp_path), tmp_path / "ev"
    _eval(gold, out, ["a"], seeds=2, max_tokens=300)
    s = _eval(gold, out, ["a", "b"], seeds=2, max_tokens=300)
    assert s["a"].done == 0 and s["a"].skipped == s["a"].total and s["b"].done == s["b"].total > 0
    cfg = json.loads((out / "eval.json").read_text())
    assert cfg["judges"] == ["a", "b"] and cfg["prompt_hash"]


@pytest.mark.parametrize("setting, old, new", [("seed", 0, 1), ("temperature", 0.7, 1.0),
                                               ("pad_messages", 8, 4), ("max_tokens", 400, 300)])
def test_rerun_with_other_answer_settings_is_refused(tmp_path, setting, old, new):
    from localbench.errors import UserError

    gold, out = _gold(tmp_path), tmp_path / "ev"
    _eval(gold, out, ["a"], seeds=2, pad=True, **{setting: old})
    before = ((out / "eval.json").read_text(), (out / "judgments.jsonl").read_text())
    with pytest.raises(UserError) as e:
        _eval(gold, out, ["a", "b"], seeds=2, pad=True, **{setting: new})
    msg = str(e.value)
    assert "\n" not in msg and f"{setting} {old!r} → {new!r}" in msg and "new --out" in msg
    assert ((out / "eval.json").read_text(), (out / "judgments.jsonl").read_text()) == before


def test_a_setting_no_answer_used_does_not_block_a_rerun(tmp_path):
    """Greedy, unpadded answers do not depend on temperature or pad_messages; once a sampled seed
    or a padded variant is asked for, they do, and a change is refused again."""
    from localbench.errors import UserError

    gold, out = _gold(tmp_path), tmp_path / "ev"
    _eval(gold, out, ["a"], seeds=1, temperature=0.7, pad_messages=8)
    s = _eval(gold, out, ["a", "b"], seeds=1, temperature=1.0, pad_messages=4)
    assert s["a"].skipped == s["a"].total and s["b"].done == s["b"].total > 0
    with pytest.raises(UserError, match="temperature"):
        _eval(gold, out, ["a"], seeds=2, temperature=0.5)
    with pytest.raises(UserError, match="pad_messages"):
        _eval(gold, out, ["a"], pad=True, pad_messages=2)


@pytest.mark.parametrize("rubric", ["asb/privacy_items.j2", "asb/system.j2"])
def test_rerun_after_editing_the_judge_prompt_is_refused(tmp_path, monkeypatch, rubric):
    """The rubric, and the system prompt beside it (which its file hash does not cover)."""
    import shutil

    from localbench.errors import UserError
    from localbench.judging import rubrics

    gold, out = _gold(tmp_path), tmp_path / "ev"
    _eval(gold, out, ["a"])
    edited = tmp_path / "judges"
    shutil.copytree(rubrics.judges_dir(), edited)
    with open(edited / rubric, "a", encoding="utf-8") as f:
        f.write("\nBe strict.\n")
    monkeypatch.setattr(rubrics, "judges_dir", lambda: edited)
    with pytest.raises(UserError, match="prompt_hash"):
        _eval(gold, out, ["a"])


# -- 4. which model judged, with which rubrics --------------------------------------------------

def _rubric_hashes():
    from localbench.registry import get_benchmark
    from localbench.judging.rubrics import judges_dir
    from localbench.runlog import file_hashes

    files = get_benchmark("asb").rubric_files()
    return files, file_hashes(files, judges_dir())


def test_eval_json_records_each_judges_model_and_the_rubric_files(tmp_path):
    files, hashes = _rubric_hashes()
    gold, out = _gold(tmp_path), tmp_path / "ev"
    _eval(gold, out, ["a"], rubric_files=files)
    _eval(gold, out, ["b"])  # a caller that passes no rubric files keeps the recorded ones
    cfg = json.loads((out / "eval.json").read_text())
    assert cfg["rubric_files"] == hashes and "asb/privacy_items.j2" in hashes
    ident = cfg["judge_models"]["a"]["identity"]
    assert ident == dataclasses.asdict(ModelIdentity(preset="a", source="test", revision="1"))
    assert cfg["judge_models"]["b"]["identity"]["preset"] == "b" and cfg["judge_models"]["b"]["engine"]
    from localbench.judging.gold_eval import load_eval

    assert load_eval(out).config.judge_models["a"]["identity"]["revision"] == "1"


def test_a_judge_whose_model_changed_is_refused(tmp_path):
    from localbench.errors import UserError

    gold, out = _gold(tmp_path), tmp_path / "ev"
    _eval(gold, out, ["a"])
    before = (out / "judgments.jsonl").read_text()
    with pytest.raises(UserError, match="judge 'a' answered here as another model \\(revision '1' → '2'\\)"):
        _eval(gold, out, ["a"], revision="2")
    assert (out / "judgments.jsonl").read_text() == before


def test_an_identity_recorded_before_a_field_existed_is_the_same_model(tmp_path):
    """eval.json written when ModelIdentity had fewer fields: the judge still resumes."""
    gold, out = _gold(tmp_path), tmp_path / "ev"
    _eval(gold, out, ["a"])
    cfg = json.loads((out / "eval.json").read_text())
    cfg["judge_models"]["a"]["identity"] = {"preset": "a", "source": "test", "revision": "1", "dtype": "auto"}
    (out / "eval.json").write_text(json.dumps(cfg))
    assert _eval(gold, out, ["a"])["a"].done == 0


def test_rejudge_json_records_the_judges_model_and_rubrics(tmp_path):
    from judges_helpers import scripted_judge
    from localbench.benchmarks.asb.planting import write_planted_run
    from localbench.rejudge import rejudge_one

    run = write_planted_run(tmp_path / "planted", "builtin", {"m": 0.5}, seed=1, categories=["CD"])
    out = asyncio.run(rejudge_one(run, "other", client=scripted_judge(lambda req, k, text: "none", "other"),
                                  show_progress=False))
    info = json.loads((out / "rejudge.json").read_text())
    assert info["identity"] == dataclasses.asdict(ModelIdentity(preset="other", source="test", revision="1"))
    assert info["rubrics"] == _rubric_hashes()[1] and info["engine"] == {"engine": "scripted"}
    assert info["calls"] == info["done"] > 0 and info["failed"] == 0


def test_resuming_a_rejudge_with_another_model_or_rubric_is_refused(tmp_path):
    """judges/<preset>/ keeps one model's labels under one set of rubrics; the same model resumes."""
    from judges_helpers import scripted_judge
    from localbench.benchmarks.asb.planting import write_planted_run
    from localbench.errors import UserError
    from localbench.rejudge import rejudge_one

    run = write_planted_run(tmp_path / "planted", "builtin", {"m": 0.5}, seed=1, categories=["CD"])

    def judge(**identity):
        client = scripted_judge(lambda req, k, text: "none", "other")
        client.backend.identity = ModelIdentity(**{"preset": "other", "source": "test", "revision": "1", **identity})
        return client

    out = asyncio.run(rejudge_one(run, "other", client=judge(), show_progress=False))
    again = asyncio.run(rejudge_one(run, "other", client=judge(), show_progress=False))
    assert again == out and json.loads((out / "rejudge.json").read_text())["done"] == 0
    with pytest.raises(UserError, match="judged before with another model: revision '1' → '2'"):
        asyncio.run(rejudge_one(run, "other", client=judge(revision="2"), show_progress=False))
    info = json.loads((out / "rejudge.json").read_text())
    info["rubrics"]["asb/privacy_items.j2"] = "older"
    (out / "rejudge.json").write_text(json.dumps(info))
    with pytest.raises(UserError, match="rubrics: asb/privacy_items.j2"):
        asyncio.run(rejudge_one(run, "other", client=judge(), show_progress=False))


# -- 5. judges that read other judges' labels ---------------------------------------------------

def test_judge_stage_asks_again_for_tasks_that_depend_on_earlier_labels(tmp_path, monkeypatch):
    """A benchmark whose second judge is built from the first's label: both run in one judge stage,
    and a rerun over the finished store makes no call."""
    from localbench import pipeline
    from localbench.spec import RunSpec

    class TwoStep:
        leakage_judges = ("first", "second")

        def judge_tasks(self, spec, transcripts, scenarios, client, store):
            tasks = [_task("s|first|all")]
            if "s|first|all" in store:  # the second judge needs the first's answer
                tasks.append(_task("s|second|all"))
            for t in tasks:
                t.meta.update(judge=t.key.split("|")[1], sim_key="s")
            return tasks

    monkeypatch.setattr(pipeline, "benchmark_of", lambda spec: TwoStep())
    backend = ScriptedBackend(lambda req: (json.dumps({"ok": True}), "stop"))
    store = RecordStore(tmp_path / "j.jsonl", Judgment)
    spec = RunSpec(models={"agent": "fake", "judge": "fake"})
    summary = asyncio.run(pipeline.judge_transcripts(spec, [], {}, StructuredClient(backend), store,
                                                     show_progress=False))
    assert [r.key for r in store.read()] == ["s|first|all", "s|second|all"]
    assert summary.done == summary.total == 2 and len(backend.calls) == 2
    again = asyncio.run(pipeline.judge_transcripts(spec, [], {}, StructuredClient(backend), store,
                                                   show_progress=False))
    assert again.done == 0 and again.skipped == 2 and len(backend.calls) == 2
