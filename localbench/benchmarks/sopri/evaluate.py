"""SopriBench's judge stage: per simulation, a slot call, then (once it has succeeded) a granularity call.

The granularity call depends on the slot label (which leaked slots some inference was matched to),
so it is planned only once that label is in the store and did not fail; the pipeline asks for tasks
again after each pass until nothing new is asked. Where there is nothing to ask (no inferences; no
leaked slot matched) the label is written at once by rule. A failed slot call leaves the
granularity call unmade, and the simulation's leakage metrics fail in scoring (never 0).
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from localbench.benchmarks.sopri.attack import Inference
from localbench.benchmarks.sopri.intent import intent_tasks
from localbench.benchmarks.sopri.judges import (GRANULARITY_JUDGE, SLOT_JUDGE, decode_levels, decode_slots,
                                                granularity_call, rule_levels, rule_slots, slot_call)
from localbench.benchmarks.sopri.scenario import User
from localbench.errors import UserError
from localbench.judging.calls import JudgeCall, schema_hash
from localbench.judging.rubrics import rubric_hash
from localbench.judging.runner import JUDGE_TEMPERATURE, JudgeTask
from localbench.records import Judgment, RecordStore, Transcript
from localbench.serving.client import StructuredClient
from localbench.serving.output import OutputSpec
from localbench.serving.seeds import derive_seed
from localbench.serving.types import GenerationRequest
from localbench.spec import RunSpec

TARGET = "all"
PLANNED = {SLOT_JUDGE: [TARGET], GRANULARITY_JUDGE: [TARGET]}


def judge_key(sim_key: str, judge: str) -> str:
    return f"{sim_key}|{judge}|{TARGET}"


def inferences_of(t: Transcript) -> list[Inference]:
    """The attacker's inferences recorded in a transcript; a malformed payload is a clear error."""
    try:
        return [Inference.model_validate(x) for x in t.payload.get("inferences") or []]
    except ValidationError as e:
        raise UserError(f"transcript {t.key}: payload 'inferences' is not a list of inferences: {e.errors()[0]['msg']}") \
            from e


def matched_inferences(inferences: list[Inference], slots: dict[str, str]) -> dict[str, list[Inference]]:
    """Slot → the inferences the slot judge matched to it (keys ``i1``.. in inference order)."""
    out: dict[str, list[Inference]] = {}
    for n, inf in enumerate(inferences):
        slot = slots.get(f"i{n + 1}")
        if slot and slot != "none":
            out.setdefault(slot, []).append(inf)
    return out


def _meta(t: Transcript, call_judge: str, rubric: str, rubric_hash: str, schema: dict[str, Any] | None,
          n: int) -> dict[str, Any]:
    return {"sim_key": t.key, "scenario": t.scenario, "category": t.category, "level": t.level,
            "seed_index": t.seed_index, "model": t.model, "judge": call_judge, "target": TARGET, "rubric": rubric,
            "rubric_hash": rubric_hash, "schema_hash": schema_hash(schema) if schema else "", "n_messages": n,
            "sim_targets": PLANNED}


def _task(spec: RunSpec, t: Transcript, call: JudgeCall, decode) -> JudgeTask:
    key = judge_key(t.key, call.judge)
    req = GenerationRequest(messages=call.messages, output=OutputSpec.from_schema(call.schema, name=call.judge),
                            role="judge", max_tokens=spec.judge_max_tokens, temperature=JUDGE_TEMPERATURE,
                            seed=derive_seed(spec.seed, "judge", t.key, call.judge), tag=key)
    return JudgeTask(key=key, request=req, decode=lambda parsed, c=call: decode(c, parsed),
                     meta=_meta(t, call.judge, call.rubric, call.rubric_hash, call.schema, call.n_messages))


def _rule(store: RecordStore[Judgment], t: Transcript, judge: str, rubric: str, label: dict[str, Any]) -> Judgment:
    j = Judgment(key=judge_key(t.key, judge), **_meta(t, judge, rubric, rubric_hash(rubric), None, 0), judge_model="rule", label=label)
    if j.key not in store:
        store.append(j)
    return j


def _stored(store: Any) -> dict[str, Judgment]:
    read = getattr(store, "read", None)
    return {j.key: j for j in read()} if read is not None else {}


def build_tasks(spec: RunSpec, transcripts: list[Transcript], scenarios: dict[str, User],
                client: StructuredClient, store: RecordStore[Judgment]) -> list[JudgeTask]:
    """Every judge call still to make for these transcripts; rule labels are written to ``store``."""
    from localbench.benchmarks.sopri.judges import GRANULARITY_RUBRIC, SLOT_RUBRIC

    have = _stored(store)
    tasks: list[JudgeTask] = []
    for t in transcripts:
        if t.error:
            continue
        user = scenarios.get(t.scenario)
        if user is None:
            raise KeyError(f"transcript {t.key}: user '{t.scenario}' is not in {spec.scenarios}")
        infs = inferences_of(t)
        slot_key = judge_key(t.key, SLOT_JUDGE)
        if not infs:
            slot_j: Judgment | None = have.get(slot_key) or _rule(store, t, SLOT_JUDGE, SLOT_RUBRIC, rule_slots())
        else:  # planned even when stored: the runner skips it and counts it as already done
            slot_j = have.get(slot_key)
            tasks.append(_task(spec, t, slot_call(infs), decode_slots))
        if slot_j is None or slot_j.failure or slot_j.label is None:
            continue  # the granularity call waits for a slot label, and is never made after a failed one
        matched = matched_inferences(infs, slot_j.label.get("slots") or {})
        if not any(matched.get(a.slot) for a in user.leaked):
            if judge_key(t.key, GRANULARITY_JUDGE) not in have:
                _rule(store, t, GRANULARITY_JUDGE, GRANULARITY_RUBRIC, rule_levels())
            continue
        tasks.append(_task(spec, t, granularity_call(user, matched), decode_levels))
    return tasks + intent_tasks(spec, transcripts, scenarios, store)  # the defense's utility, where it ran
