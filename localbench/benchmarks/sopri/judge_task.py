"""One SopriBench judge call of one simulation as the judge stage's ``JudgeTask``, and its key.

Every SopriBench judge (slot, granularity, the defense's intent) judges a whole simulation
(target ``all``) with one grammar-constrained call: the same key, request, seed and record fields
for each, built here once.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from localbench.judging.calls import JudgeCall, schema_hash
from localbench.judging.runner import JUDGE_TEMPERATURE, JudgeTask
from localbench.runlog import Transcript
from localbench.serving.output import OutputSpec
from localbench.serving.seeds import derive_seed
from localbench.serving.types import GenerationRequest
from localbench.spec import RunSpec

TARGET = "all"


def judge_key(sim_key: str, judge: str) -> str:
    return f"{sim_key}|{judge}|{TARGET}"


def judge_meta(t: Transcript, judge: str, rubric: str, rubric_hash: str, schema: dict[str, Any] | None, n: int,
               planned: Mapping[str, list[str]]) -> dict[str, Any]:
    """What a judgment of ``t`` records besides its label (``planned``: judge → targets of the simulation)."""
    return {"sim_key": t.key, "scenario": t.scenario, "category": t.category, "condition": t.condition,
            "seed_index": t.seed_index, "model": t.model, "judge": judge, "target": TARGET, "rubric": rubric,
            "rubric_hash": rubric_hash, "schema_hash": schema_hash(schema) if schema else "", "n_messages": n,
            "sim_targets": dict(planned)}


def judge_task(spec: RunSpec, t: Transcript, call: JudgeCall, decode: Callable[[JudgeCall, dict[str, Any]], Any],
               planned: Mapping[str, list[str]]) -> JudgeTask:
    """The call as a task: keyed ``<sim>|<judge>|all``, seeded by the run, the simulation and the judge."""
    key = judge_key(t.key, call.judge)
    req = GenerationRequest(messages=call.messages, output=OutputSpec.from_schema(call.schema, name=call.judge),
                            role="judge", max_tokens=spec.judge_max_tokens, temperature=JUDGE_TEMPERATURE,
                            seed=derive_seed(spec.seed, "judge", t.key, call.judge), tag=key)
    return JudgeTask(key=key, request=req, decode=lambda parsed, c=call: decode(c, parsed),
                     meta=judge_meta(t, call.judge, call.rubric, call.rubric_hash, call.schema, call.n_messages,
                                     planned))
