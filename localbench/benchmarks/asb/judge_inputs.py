"""AgentSocialBench's real judge inputs for `localbench judges sample`: the dyadic privacy judge's calls
(CD, MC, CU; one input per private item) and the multi-party pair rubric's (GC, HS, CM, AM; one input
per private item and recipient it must not reach), rebuilt from a transcript.

Each call is rebuilt by the judge stage's own builder (``judges.privacy_item_calls`` and
``privacy_pair_calls`` over the delivered messages). The messages a labeller sees are the call's
(the cross-boundary ones for the item judge, every agent message for the pair rubric), and they must
be what the builder's call shows, or the call is left out (so what people label is what the judge
saw). A pair input names the recipient in ``meta.forbidden`` (the labeller asks about that person)
and goes to gold for the ``privacy_pairs`` judge. Calls split to fit the judge's context (``#k``) are
left out. The abstraction, task and behaviour judges are not sampled yet.
"""

from __future__ import annotations

from typing import Any

from localbench.benchmarks.asb.boundaries import cross_boundary_messages, person_of
from localbench.benchmarks.asb.judge_stage import delivered_messages
from localbench.benchmarks.asb.judges import (_display, privacy_item_calls, privacy_items_call, privacy_pair_calls,
                                              render_transcript)
from localbench.benchmarks.asb.scenario import Scenario
from localbench.judging.gold import GoldMessage, GoldPrivateItem
from localbench.judging.sample import NO_LABEL, NOT_REBUILT, RULE, SPLIT, Frame, JudgeInput, fits_all, item_level
from localbench.runlog import Judgment, Transcript

JUDGE = "privacy"
PAIRS = "privacy_pairs"
SAMPLED = (JUDGE, PAIRS)


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
    if not scenario.is_dyadic:
        return pair_inputs(transcript, scenario, judgments)
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
