"""AgentSocialBench's real judge inputs for `localbench judges sample`: the dyadic privacy judge's calls
(CD, MC, CU) rebuilt from a transcript, one input per private item.

Each call is rebuilt by the judge stage's own builder (``judges.privacy_item_calls`` over the
delivered messages); the messages a labeller sees are the cross-boundary messages of that call, and
a call rebuilt from them must equal the builder's, or it is left out (so what people label is what
the judge saw). Calls split to fit the judge's context (target ``#k``) are left out. The multi-party
pair judge, the abstraction, task and behaviour judges are not sampled yet.
"""

from __future__ import annotations

from typing import Any

from localbench.benchmarks.asb.boundaries import cross_boundary_messages, person_of
from localbench.benchmarks.asb.judge_stage import delivered_messages
from localbench.benchmarks.asb.judges import _display, privacy_item_calls, privacy_items_call, render_transcript
from localbench.benchmarks.asb.scenario import Scenario
from localbench.judging.gold import GoldMessage, GoldPrivateItem
from localbench.judging.sample import NO_LABEL, NOT_REBUILT, SPLIT, Frame, JudgeInput, fits_all, item_level
from localbench.runlog import Judgment, Transcript

JUDGE = "privacy"
SAMPLED = (JUDGE,)


def _shown(scenario: Scenario, messages: list[dict[str, Any]], owner: str) -> list[dict[str, Any]]:
    """The messages of the call for ``owner`` ("all" or a CU user): as ``privacy_item_calls`` picks them."""
    crossing = cross_boundary_messages(scenario, messages)
    if scenario.category == "CU":
        return [m for m in crossing if person_of(scenario, m.get("sender", "")) == owner]
    return crossing


def judge_inputs(transcript: Transcript, scenario: Scenario, judgments: list[Judgment]) -> Frame:
    frame = Frame([])
    mine = {j.target: j for j in judgments if j.judge == JUDGE and j.judge_model != "rule"}
    if not mine or not scenario.is_dyadic:
        return frame
    for t in [t for t in mine if "#" in t]:
        frame.leave(SPLIT)
        del mine[t]
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
        gold_msgs = [GoldMessage(sender=_display(scenario, m.get("sender", "?")),
                                 recipients=[_display(scenario, r) for r in m.get("recipients") or []],
                                 content=str(m.get("content", ""))) for m in shown]
        for it in items:
            known, level = item_level(j, it.id)
            if not known:
                frame.leave(NO_LABEL)
                continue
            frame.inputs.append(JudgeInput(
                judge=JUDGE, target=call.target, unit=it.id, messages=gold_msgs, judge_label=level,
                item=GoldPrivateItem(owner=_display(scenario, it.owner), text=it.text, id=it.id, domain=it.domain)))
    return frame
