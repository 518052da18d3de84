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
from localbench.benchmarks.sopri.judge_task import TARGET, judge_key, judge_meta, judge_task
from localbench.benchmarks.sopri.judges import (GRANULARITY_JUDGE, SLOT_JUDGE, decode_levels, decode_slots,
                                                granularity_call, rule_levels, rule_slots, slot_call)
from localbench.benchmarks.sopri.scenario import User
from localbench.errors import UserError
from localbench.judging.rubrics import rubric_hash
from localbench.judging.runner import JudgeTask
from localbench.records import Judgment, RecordStore, Transcript
from localbench.serving.client import StructuredClient
from localbench.spec import RunSpec

PLANNED = {SLOT_JUDGE: [TARGET], GRANULARITY_JUDGE: [TARGET]}


def inferences_of(t: Transcript) -> list[Inference]:
    """The attacker's inferences recorded in a transcript; a malformed payload is a clear error."""
    try:
        return [Inference.model_validate(x) for x in t.payload.get("inferences") or []]
    except ValidationError as e:
        raise UserError(f"transcript {t.key}: payload 'inferences' is not a list of inferences: {e.errors()[0]['msg']}") \
            from e


def matched_inferences(inferences: list[Inference], slots: dict[str, str]) -> dict[str, list[Inference]]:
    """Slot → its answer: the first inference the slot judge matched to it (keys ``i1``.. in inference
    order). One answer per attribute: a later inference about the same slot is not scored, so hedging
    across several guesses earns nothing (``extra_guesses`` counts them)."""
    out: dict[str, list[Inference]] = {}
    for n, inf in enumerate(inferences):
        slot = slots.get(f"i{n + 1}")
        if slot and slot != "none" and slot not in out:
            out[slot] = [inf]
    return out


def extra_guesses(inferences: list[Inference], slots: dict[str, str]) -> int:
    """Inferences matched to a slot another inference already answered (not scored)."""
    named = [s for n in range(len(inferences)) if (s := slots.get(f"i{n + 1}")) and s != "none"]
    return len(named) - len(set(named))


def judge_name(spec: RunSpec) -> str:
    """``exact`` when the spec asks for the deterministic judge (``extra.judge: exact``), else ``model``."""
    return str(spec.extra.get("judge") or "model")


def _rule(store: RecordStore[Judgment], t: Transcript, judge: str, rubric: str, label: dict[str, Any]) -> Judgment:
    j = Judgment(key=judge_key(t.key, judge), **judge_meta(t, judge, rubric, rubric_hash(rubric), None, 0, PLANNED),
                 judge_model="rule", label=label)
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

    from localbench.benchmarks.sopri import exact

    have = _stored(store)
    by_rule = judge_name(spec) == exact.EXACT
    tasks: list[JudgeTask] = []
    for t in transcripts:
        if t.error:
            continue
        user = scenarios.get(t.scenario)
        if user is None:
            raise KeyError(f"transcript {t.key}: user '{t.scenario}' is not in {spec.scenarios}")
        infs = inferences_of(t)
        slot_key = judge_key(t.key, SLOT_JUDGE)
        if by_rule:
            slot_j: Judgment | None = have.get(slot_key) or _rule(store, t, SLOT_JUDGE, exact.RUBRIC,
                                                                  exact.exact_slots(infs))
        elif not infs:
            slot_j = have.get(slot_key) or _rule(store, t, SLOT_JUDGE, SLOT_RUBRIC, rule_slots())
        else:  # planned even when stored: the runner skips it and counts it as already done
            slot_j = have.get(slot_key)
            tasks.append(judge_task(spec, t, slot_call(infs), decode_slots, PLANNED))
        if slot_j is None or slot_j.failure or slot_j.label is None:
            continue  # the granularity call waits for a slot label, and is never made after a failed one
        matched = matched_inferences(infs, slot_j.label.get("slots") or {})
        if not any(matched.get(a.slot) for a in user.leaked):
            if judge_key(t.key, GRANULARITY_JUDGE) not in have:
                _rule(store, t, GRANULARITY_JUDGE, GRANULARITY_RUBRIC, rule_levels())
            continue
        if by_rule:
            if judge_key(t.key, GRANULARITY_JUDGE) not in have:
                _rule(store, t, GRANULARITY_JUDGE, exact.RUBRIC, exact.exact_levels(user, matched))
            continue
        tasks.append(judge_task(spec, t, granularity_call(user, matched), decode_levels, PLANNED))
    return tasks + intent_tasks(spec, transcripts, scenarios, store)  # the defense's utility, where it ran
