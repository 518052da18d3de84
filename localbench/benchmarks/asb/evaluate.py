"""The judge stage for AgentSocialBench: finished transcripts → judgments.jsonl.

All judge calls of a run go to the judge model in one batched pass (phases: the agent model is
done before this starts). Calls that showed no messages get their label by rule, without a model.
"""

from __future__ import annotations

from typing import Any

from localbench.benchmarks.asb.judges import JudgeCall, decode, judge_calls, rule_label, schema_hash
from localbench.benchmarks.asb.scenario import Scenario
from localbench.judging.runner import JudgeRunSummary, JudgeTask, run_judge_tasks
from localbench.runtime.records import JsonlStore
from localbench.serving.client import StructuredClient
from localbench.serving.output import OutputSpec
from localbench.serving.seeds import derive_seed
from localbench.serving.types import GenerationRequest
from localbench.spec import RunSpec


def delivered_messages(transcript: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages that actually reached someone (not passes, held drafts or failed turns)."""
    return [e for e in transcript.get("entries", []) if e.get("kind") == "message"]


def fits_in(client: StructuredClient, max_tokens: int):
    backend = client.backend

    def fits(messages: list[dict[str, str]]) -> bool:
        return backend.count_tokens(messages) + max_tokens <= backend.max_model_len

    return fits


def _meta(t: dict[str, Any], call: JudgeCall) -> dict[str, Any]:
    return {"sim_key": t["key"], "scenario": t["scenario"], "category": t["category"], "level": t["level"],
            "seed_index": t.get("seed_index", 0), "model": t.get("model", ""), "judge": call.judge,
            "target": call.target, "rubric": call.rubric, "rubric_hash": call.rubric_hash,
            "schema_hash": schema_hash(call.schema), "n_messages": call.n_messages, "truncated": call.truncated}


def build_tasks(spec: RunSpec, transcripts: list[dict[str, Any]], scenarios: dict[str, Scenario],
                client: StructuredClient, store: JsonlStore) -> list[JudgeTask]:
    """JudgeTasks for every call still to make; rule-labelled calls are written straight away."""
    fits = fits_in(client, spec.judge_max_tokens)
    tasks: list[JudgeTask] = []
    for t in transcripts:
        scenario = scenarios.get(t["scenario"])
        if scenario is None:
            raise KeyError(f"transcript {t['key']}: scenario '{t['scenario']}' is not in {spec.scenarios}")
        for call in judge_calls(scenario, delivered_messages(t), fits):
            key = f"{t['key']}|{call.judge}|{call.target}"
            meta = _meta(t, call)
            if call.n_messages == 0:
                if key in store:
                    continue
                store.append({"key": key, **meta, "judge_model": "rule", "label": rule_label(call),
                              "failure": None, "text": None, "call": None})
                continue
            req = GenerationRequest(
                messages=call.messages, output=OutputSpec.from_schema(call.schema, name=call.judge),
                role="judge", max_tokens=spec.judge_max_tokens, temperature=0.0,
                seed=derive_seed(spec.seed, "judge", t["key"], call.judge, call.target), tag=key)
            tasks.append(JudgeTask(key=key, request=req, decode=lambda parsed, c=call: decode(c, parsed), meta=meta))
    return tasks


async def judge_run(spec: RunSpec, transcripts: list[dict[str, Any]], scenarios: dict[str, Scenario],
                    client: StructuredClient, store: JsonlStore, show_progress: bool | None = None) -> JudgeRunSummary:
    tasks = build_tasks(spec, transcripts, scenarios, client, store)
    return await run_judge_tasks(client, tasks, store, max_concurrency=spec.serving.max_concurrency,
                                 show_progress=show_progress)
