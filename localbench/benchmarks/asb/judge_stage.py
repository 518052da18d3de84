"""The judge stage for AgentSocialBench: finished transcripts → judgments.jsonl.

``build_tasks`` makes every judge call of a run; the pipeline sends them to the judge model in one
batched pass (phases: the agent model is done before this starts). Calls that showed no messages
get their label by rule, without a model.
"""

from __future__ import annotations

from typing import Any

from localbench.benchmarks.asb.judges import decode, judge_calls, rule_label
from localbench.benchmarks.asb.scenario import Scenario
from localbench.judging.calls import fits_in
from localbench.judging.runner import JUDGE_TEMPERATURE, JudgeTask
from localbench.runlog import Judgment, RecordStore, Transcript
from localbench.serving.client import StructuredClient
from localbench.serving.output import OutputSpec
from localbench.serving.seeds import derive_seed
from localbench.serving.types import GenerationRequest
from localbench.spec import RunSpec


def delivered_messages(transcript: Transcript) -> list[dict[str, Any]]:
    """The messages that actually reached someone (not passes, held drafts or failed turns)."""
    return [e.model_dump() for e in transcript.entries if e.kind == "message"]


def build_tasks(spec: RunSpec, transcripts: list[Transcript], scenarios: dict[str, Scenario],
                client: StructuredClient, store: RecordStore[Judgment]) -> list[JudgeTask]:
    """JudgeTasks for every call still to make; rule-labelled calls are written straight away."""
    fits = fits_in(client, spec.judge_max_tokens)
    tasks: list[JudgeTask] = []
    for t in transcripts:
        scenario = scenarios.get(t.scenario)
        if scenario is None:
            raise KeyError(f"transcript {t.key}: scenario '{t.scenario}' is not in {spec.scenarios}")
        calls = judge_calls(scenario, delivered_messages(t), fits)
        planned: dict[str, list[str]] = {}
        for call in calls:
            planned.setdefault(call.judge, []).append(call.target)
        for call in calls:
            key = f"{t.key}|{call.judge}|{call.target}"
            meta = call.record_fields(t, sim_targets=planned)  # lets scoring see a half-judged simulation
            if call.n_messages == 0:
                if key in store:
                    continue
                store.append(Judgment(key=key, **meta, judge_model="rule", label=rule_label(call)))
                continue
            req = GenerationRequest(
                messages=call.messages, output=OutputSpec.from_schema(call.schema, name=call.judge),
                role="judge", max_tokens=spec.judge_max_tokens, temperature=JUDGE_TEMPERATURE,
                seed=derive_seed(spec.seed, "judge", t.key, call.judge, call.target), tag=key)
            tasks.append(JudgeTask(key=key, request=req, decode=lambda parsed, c=call: decode(c, parsed), meta=meta))
    return tasks
