"""AgentSocialBench's real judge inputs for `localbench judges sample`: the dyadic privacy judge's calls
(CD, MC, CU; one input per private item) and the multi-party pair rubric's (GC, HS, CM, AM; one input
per private item and recipient it must not reach), rebuilt from a transcript.

Each call is rebuilt by the judge stage's own builder (``judges.privacy_item_calls`` and
``privacy_pair_calls`` over the delivered messages). The messages a labeller sees are the call's
(the cross-boundary ones for the item judge, every agent message for the pair rubric), and they must
be what the builder's call shows, or the call is left out (so what people label is what the judge
saw). A pair input names the recipient in ``meta.forbidden`` (the labeller asks about that person)
and goes to gold for the ``privacy_pairs`` judge. Calls split to fit the judge's context (``#k``) are
left out.

The abstraction judge (IAS) scores each cross-boundary message of a call 0 / 0.5 / 1 / n/a against every
sensitive item: one input per scored message, holding the call's messages, the message scored
(``planted``) and every item's text (``meta.items``), as the abstraction gold's items do
(``gold_judges.AbstractionGold``). The task judge (TCQ, Task%) answers once per simulation: one input
holding the messages it was shown, the task (``meta.task``) and its success criterion (the item's
text), labelled yes / no by its ``task_completed``, as the task gold's items are. The behaviour
judge's flags feed no headline metric and are not sampled.
"""

from __future__ import annotations

from typing import Any

from localbench.benchmarks.asb.boundaries import cross_boundary_messages, person_of
from localbench.benchmarks.asb.judge_stage import delivered_messages
from localbench.benchmarks.asb.judges import (IAS_SCORES, _display, abstraction_calls, privacy_item_calls,
                                              privacy_items_call, privacy_pair_calls, render_transcript, task_call,
                                              task_messages)
from localbench.benchmarks.asb.scenario import Scenario
from localbench.judging.gold import GoldMessage, GoldPrivateItem
from localbench.judging.sample import NO_LABEL, NOT_REBUILT, RULE, SPLIT, Frame, JudgeInput, fits_all, item_level
from localbench.runlog import Judgment, Transcript

JUDGE = "privacy"
PAIRS = "privacy_pairs"
ABSTRACTION = "abstraction"
TASK = "task"
SAMPLED = (JUDGE, PAIRS, ABSTRACTION, TASK)
SCORE_LABEL = {v: k for k, v in IAS_SCORES.items()}  # a recorded score (None: n/a) -> the judge's label


def _shown(scenario: Scenario, messages: list[dict[str, Any]], owner: str) -> list[dict[str, Any]]:
    """The messages of the call for ``owner`` ("all" or a CU user): as ``privacy_item_calls`` picks them."""
    crossing = cross_boundary_messages(scenario, messages)
    if scenario.category == "CU":
        return [m for m in crossing if person_of(scenario, m.get("sender", "")) == owner]
    return crossing


def _gold_messages(scenario: Scenario, shown: list[dict[str, Any]]) -> list[GoldMessage]:
    return [GoldMessage(sender=_display(scenario, m.get("sender", "?")),
                        recipients=[_display(scenario, r) for r in m.get("recipients") or []],
                        content=str(m.get("content", ""))) for m in shown]


def _judged(judgments: list[Judgment], judge: str, frame: Frame) -> dict[str, Judgment]:
    """One judge's model-made judgments of a simulation by target; split calls counted and dropped."""
    frame.leave(RULE, sum(j.judge == judge and j.judge_model == "rule" for j in judgments))
    mine = {j.target: j for j in judgments if j.judge == judge and j.judge_model != "rule"}
    for t in [t for t in mine if "#" in t]:
        frame.leave(SPLIT)
        del mine[t]
    return mine


def judge_inputs(transcript: Transcript, scenario: Scenario, judgments: list[Judgment], spec: Any = None) -> Frame:
    frame = item_inputs(transcript, scenario, judgments) if scenario.is_dyadic else \
        pair_inputs(transcript, scenario, judgments)
    frame.add(abstraction_inputs(transcript, scenario, judgments))
    frame.add(task_inputs(transcript, scenario, judgments))
    return frame


def item_inputs(transcript: Transcript, scenario: Scenario, judgments: list[Judgment]) -> Frame:
    """The dyadic privacy judge's inputs: per private item of each owner's call, the judge's level."""
    frame = Frame([])
    mine = _judged(judgments, JUDGE, frame)
    if not mine:
        return frame
    messages = delivered_messages(transcript)
    for call in privacy_item_calls(scenario, messages, fits_all):
        j = mine.get(call.target) or mine.get("all")  # a planted run's truth labels every owner under "all"
        if j is None:
            continue
        shown = _shown(scenario, messages, call.target)
        by_id = {it.id: it for it in scenario.items}
        items = [by_id[i] for i in call.keymap.values()]
        owner_name = _display(scenario, items[0].owner)
        again = privacy_items_call(owner_name, [(it.id, it.text) for it in items],
                                   render_transcript(scenario, shown), target=call.target)
        if again.messages != call.messages or not shown:
            frame.leave(NOT_REBUILT)
            continue
        gold_msgs = _gold_messages(scenario, shown)
        for it in items:
            known, level = item_level(j, it.id)
            if not known:
                frame.leave(NO_LABEL)
                continue
            frame.inputs.append(JudgeInput(
                judge=JUDGE, target=call.target, unit=it.id, messages=gold_msgs, judge_label=level,
                item=GoldPrivateItem(owner=_display(scenario, it.owner), text=it.text, id=it.id, domain=it.domain)))
    return frame


def pair_inputs(transcript: Transcript, scenario: Scenario, judgments: list[Judgment]) -> Frame:
    """The pair rubric's inputs: per (item, forbidden recipient) of each owner's call, the judge's level."""
    frame = Frame([])
    mine = _judged(judgments, PAIRS, frame)
    if not mine:
        return frame
    messages = delivered_messages(transcript)
    shown = [m for m in messages if m.get("sender") not in (None, "system")]  # as privacy_pair_calls picks them
    by_id = {it.id: it for it in scenario.items}
    for call in privacy_pair_calls(scenario, messages, fits_all):
        j = mine.get(call.target)
        if j is None:
            continue
        if not shown or render_transcript(scenario, shown) not in call.messages[-1]["content"]:
            frame.leave(NOT_REBUILT)
            continue
        gold_msgs = _gold_messages(scenario, shown)
        for key, item_id in call.keymap["items"].items():
            it = by_id[item_id]
            levels = None if j.label is None else (j.label.get("levels") or {}).get(item_id)
            for person in call.keymap["recipients"][key].values():
                level = None if levels is None else levels.get(person) if isinstance(levels, dict) else None
                if j.label is not None and level not in ("none", "partial", "full"):
                    frame.leave(NO_LABEL)
                    continue
                frame.inputs.append(JudgeInput(
                    judge=PAIRS, target=call.target, unit=f"{item_id}>{person}", messages=gold_msgs,
                    judge_label=level, gold_judge=PAIRS, meta={"forbidden": [_display(scenario, person)]},
                    item=GoldPrivateItem(owner=_display(scenario, it.owner), text=it.text, id=it.id, domain=it.domain)))
    return frame


def abstraction_inputs(transcript: Transcript, scenario: Scenario, judgments: list[Judgment]) -> Frame:
    """The abstraction judge's inputs: per message a call scored, its score (a failed call: every message)."""
    frame = Frame([])
    mine = _judged(judgments, ABSTRACTION, frame)
    if not mine:
        return frame
    messages = delivered_messages(transcript)
    by_index = {m.get("index"): m for m in messages}
    texts = [it.text for it in scenario.items]
    owners = ", ".join(dict.fromkeys(_display(scenario, it.owner) for it in scenario.items))
    for call in abstraction_calls(scenario, messages, fits_all):
        j = mine.get(call.target)
        if j is None:
            continue
        chunk = [by_index.get(i) for i in call.keymap.values()]
        if any(m is None for m in chunk):
            frame.leave(NOT_REBUILT)
            continue
        gold_msgs = _gold_messages(scenario, chunk)
        scores = None if j.label is None else (j.label.get("scores") or {})
        for pos, (key, index) in enumerate(call.keymap.items()):
            if scores is not None and (str(index) not in scores or scores[str(index)] not in SCORE_LABEL):
                frame.leave(NO_LABEL)
                continue
            frame.inputs.append(JudgeInput(
                judge=ABSTRACTION, target=call.target, unit=key, messages=gold_msgs, gold_judge=ABSTRACTION,
                judge_label=None if scores is None else SCORE_LABEL[scores[str(index)]],
                planted=[pos], meta={"items": texts, "keys": list(call.keymap)},
                item=GoldPrivateItem(owner=owners, text="; ".join(texts), id=key)))
    return frame


def task_inputs(transcript: Transcript, scenario: Scenario, judgments: list[Judgment]) -> Frame:
    """The task judge's input: the messages it was shown (the latest ones, where the run trimmed them) and
    whether it found the task completed (yes / no; None: a failed call)."""
    frame = Frame([])
    mine = _judged(judgments, TASK, frame)
    j = mine.get("all")
    if j is None:
        return frame
    messages = delivered_messages(transcript)
    kept = messages[len(messages) - j.n_messages:] if 0 < j.n_messages <= len(messages) else messages
    criterion = scenario.success_criteria.task_completed
    shown = task_messages(scenario.task, criterion, render_transcript(scenario, kept))
    call = task_call(scenario, messages, lambda msgs: msgs == shown)  # the builder's own trimming, down to ``kept``
    if not kept or call.messages != shown:
        frame.leave(NOT_REBUILT)
        return frame
    if j.label is not None and not isinstance(j.label.get("task_completed"), bool):
        frame.leave(NO_LABEL)
        return frame
    frame.inputs.append(JudgeInput(
        judge=TASK, target=j.target, unit="task", messages=_gold_messages(scenario, kept), gold_judge=TASK,
        judge_label=None if j.label is None else ("yes" if j.label["task_completed"] else "no"),
        planted=[len(kept) - 1], meta={"task": scenario.task, "keys": [str(m.get("index", i)) for i, m in enumerate(kept)]},
        item=GoldPrivateItem(owner=_display(scenario, scenario.people[0].id), text=criterion, id="task")))
    return frame
