"""SopriBench's judge stage: per simulation, one granularity call over the leaked attributes answered.

The attacker's answer is keyed by slot (one value per attribute), so no judge matches answers to
attributes. Where there is nothing to ask (no leaked attribute answered) the label is written at once
by rule; with the exact judge every label is. A failed call makes the simulation's leakage metrics
fail in scoring (never 0).

Transcripts written before the keyed answer (payload ``inferences``: a list of free-form
``{attribute, value, posts, evidence}``) are still read: each attribute that names a slot (the exact
judge's ``slot_named``: the slot's name, any case, spaces or underscores) gives that slot's answer,
the first such inference per slot; the others are dropped. Their stored labels score as they are:
the old granularity label is already keyed by slot, and the old "slot" labels are not read.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from localbench.benchmarks.sopri.attack import Inference, profile_of
from localbench.benchmarks.sopri import exact
from localbench.benchmarks.sopri.intent import intent_tasks
from localbench.benchmarks.sopri.judge_task import TARGET, judge_key, judge_meta, judge_task
from localbench.benchmarks.sopri.judges import (GRANULARITY_JUDGE, GRANULARITY_RUBRIC, decode_levels, granularity_call,
                                                rule_levels)
from localbench.benchmarks.sopri.scenario import User
from localbench.errors import UserError
from localbench.judging.rubrics import rubric_hash
from localbench.judging.runner import JudgeTask
from localbench.runlog import Judgment, RecordStore, Transcript
from localbench.serving.client import StructuredClient
from localbench.spec import RunSpec

PLANNED = {GRANULARITY_JUDGE: [TARGET]}


def _first_per_slot(old: list[Any]) -> dict[str, Any]:
    """An old free-form inference list as an answer object: the first inference per named slot."""
    out: dict[str, Any] = {}
    for x in old:
        slot = exact.slot_named(str(x.get("attribute", ""))) if isinstance(x, dict) else None
        if slot and slot not in out:
            out[slot] = {k: v for k, v in x.items() if k != "attribute"}
    return out


def inferences_of(t: Transcript) -> list[Inference]:
    """The attacker's answer recorded in a transcript, one inference per slot in slot order (an old
    list form converted, see above); a malformed payload is a clear error."""
    answer = t.payload.get("profile")
    if answer is None and "inferences" in t.payload:
        answer = _first_per_slot(t.payload.get("inferences") or [])
    try:
        return profile_of(answer or {})
    except (ValidationError, ValueError, TypeError) as e:
        raise UserError(f"transcript {t.key}: payload 'profile' is not an answer keyed by slot: {e}") from e


def answers_of(t: Transcript) -> dict[str, Inference]:
    """Slot → the transcript's one answer for it."""
    return {i.attribute: i for i in inferences_of(t)}


def judge_name(spec: RunSpec) -> str:
    """``exact`` when the spec asks for the deterministic judge (``extra.judge: exact``), else ``model``."""
    return spec.settings.judge or "model"


def _rule(store: RecordStore[Judgment], t: Transcript, judge: str, rubric: str, label: dict[str, Any]) -> Judgment:
    j = Judgment(key=judge_key(t.key, judge), **judge_meta(t, judge, rubric, rubric_hash(rubric), None, 0, PLANNED),
                 judge_model="rule", label=label)
    if j.key not in store:
        store.append(j)
    return j


def build_tasks(spec: RunSpec, transcripts: list[Transcript], scenarios: dict[str, User],
                client: StructuredClient, store: RecordStore[Judgment]) -> list[JudgeTask]:
    """Every judge call still to make for these transcripts; rule labels are written to ``store``."""
    by_rule = judge_name(spec) == exact.EXACT
    tasks: list[JudgeTask] = []
    for t in transcripts:
        if t.error:
            continue
        user = scenarios.get(t.scenario)
        if user is None:
            raise KeyError(f"transcript {t.key}: user '{t.scenario}' is not in {spec.scenarios}")
        answers = answers_of(t)
        if not any(a.slot in answers for a in user.leaked):
            _rule(store, t, GRANULARITY_JUDGE, GRANULARITY_RUBRIC, rule_levels())
        elif by_rule:
            _rule(store, t, GRANULARITY_JUDGE, exact.RUBRIC, exact.exact_levels(user, answers))
        else:  # planned even when stored: the runner skips it and counts it as already done
            tasks.append(judge_task(spec, t, granularity_call(user, answers), decode_levels, PLANNED))
    return tasks + intent_tasks(spec, transcripts, scenarios, store)  # the defense's utility, where it ran
