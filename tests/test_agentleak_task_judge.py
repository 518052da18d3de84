"""TSR's semantic part: the task judge of a scenario's success criteria (grammar-constrained, one key
per criterion, a "met" only with a quote of the answer), through the real judge machinery; a failed
or ungrounded answer is counted as a failure, never as a success."""

from __future__ import annotations

import asyncio

import pytest

from localbench.benchmarks.agentleak.judge_stage import build_tasks
from localbench.benchmarks.agentleak.loaders import load_scenarios
from localbench.benchmarks.agentleak.oracle import play_oracle
from localbench.benchmarks.agentleak.scoring import trace_metrics
from localbench.benchmarks.agentleak.task_judge import TASK_JUDGE, decode_task, task_call
from localbench.judging.runner import run_judge_tasks
from localbench.runlog import Judgment, RecordStore
from localbench.spec import load_spec

SCENARIO = next(s for s in load_scenarios("builtin", ["finance"]).scenarios if s.success.criteria)


@pytest.fixture(scope="module")
def trace():
    return asyncio.run(play_oracle(SCENARIO, "multi"))


def _answer(verdict: str, evidence: str) -> dict:
    return {f"criterion_{k + 1}": {"evidence": evidence, "verdict": verdict}
            for k in range(len(SCENARIO.success.criteria))}


def test_a_met_verdict_needs_a_quote_of_the_answer(trace):
    call = task_call(SCENARIO, trace)
    assert call is not None and call.n_messages == 1 and list(call.schema["required"]) == list(call.keymap)
    quote = trace.payload["final"][:12]
    assert set(decode_task(call, _answer("met", quote))["verdicts"].values()) == {"met"}
    with pytest.raises(ValueError, match="ungrounded label"):
        decode_task(call, _answer("met", "ok"))  # a two-character "quote"
    with pytest.raises(ValueError, match="ungrounded label"):
        decode_task(call, _answer("met", "words the answer never said"))
    assert set(decode_task(call, _answer("not met", "none"))["verdicts"].values()) == {"not met"}
    with pytest.raises(KeyError):
        decode_task(call, {"criterion_1": {"evidence": "none", "verdict": "met"}, "criterion_9": {}})


def _j(label: dict | None, failure: str | None = None) -> Judgment:
    return Judgment(key=f"{SCENARIO.id}|multi|0|task|task", sim_key=f"{SCENARIO.id}|multi|0", judge=TASK_JUDGE,
                    target="task", judge_model="m", label=label, failure=failure)


def test_tsr_semantic_is_the_criteria_verdict_and_a_failure_is_never_success(trace):
    call = task_call(SCENARIO, trace)
    met = decode_task(call, _answer("met", trace.payload["final"][:12]))
    unmet = decode_task(call, _answer("not met", "none"))
    assert trace_metrics(trace, SCENARIO, [_j(met)])[0]["TSR:semantic"] == 1.0
    assert trace_metrics(trace, SCENARIO, [_j(unmet)])[0]["TSR:semantic"] == 0.0
    m, failed, detail = trace_metrics(trace, SCENARIO, [_j(None, "ungrounded label: criterion_1")])
    assert m["TSR:semantic"] is None and "TSR:semantic" in failed
    m, failed, detail = trace_metrics(trace, SCENARIO, [])
    assert m["TSR:semantic"] is None and "TSR:semantic" in failed  # not judged yet: failed, never a success
    m, failed, _ = trace_metrics(trace, SCENARIO, [], tier3=False)
    assert "TSR:semantic" not in m and not failed and m["TSR"] == 1.0  # --judge none: not judged, not failed


def test_the_task_judge_on_the_tiny_model_gives_schema_valid_answers_or_counted_failures(tmp_path, tiny_dir, trace):
    from localbench.serving.client import StructuredClient
    from localbench.serving.engines import open_backend

    spec = load_spec(None, benchmark="agentleak", judge_max_tokens=160, out=str(tmp_path))
    store = RecordStore(tmp_path / "judgments.jsonl", Judgment)
    backend = open_backend("tiny-random", "hf")
    try:
        client = StructuredClient(backend, cache=None, max_retries=1)
        tasks = [t for t in build_tasks(spec, [trace], {SCENARIO.id: SCENARIO}, client, store)
                 if t.meta["judge"] == TASK_JUDGE]
        assert len(tasks) == 1
        summary = asyncio.run(run_judge_tasks(client, tasks, store, show_progress=False))
    finally:
        asyncio.run(backend.aclose())
    assert summary.done == 1
    (j,) = [x for x in store.read() if x.judge == TASK_JUDGE]
    assert j.judge_model == "tiny-random" and j.key == f"{trace.key}|task|task"
    m, failed, _ = trace_metrics(trace, SCENARIO, [j])
    if j.failure is None:  # schema-valid, and every "met" quoted the answer
        assert set(j.label["verdicts"]) == {str(k) for k in range(len(SCENARIO.success.criteria))}
        assert m["TSR:semantic"] in (0.0, 1.0)
    else:  # counted as a failure, never a success
        assert j.label is None and m["TSR:semantic"] is None and "TSR:semantic" in failed
