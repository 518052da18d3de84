"""AgentLeak's real judge inputs for `localbench judges sample`: the tier-3 leak judge's calls rebuilt from
a trace, one input per vault field judged on a channel.

A call is rebuilt by the judge's own builder (``judges.judge_calls`` over the channel's events, with the
fields its recorded label names, or for a failed call every field the judge stage asks there), and its
events become the labeller's messages, one per event, under the channel's name, as the judge read them.
Calls split to fit the judge's context (``#k``) are left out. A failed call has no label to name its
fields: they are the channel's judged fields, or where the answer budget split them into groups
(``C3.1``) that group, rebuilt from the run's ``judge_max_tokens`` as the judge stage groups them. The
semantic task judge (TSR) is not sampled yet.
"""

from __future__ import annotations

from typing import Any

from localbench.benchmarks.agentleak.judge_stage import JUDGE, channel_contents, chunks, judged_fields
from localbench.benchmarks.agentleak.judges import _domain, channel_name, field_text, judge_calls
from localbench.benchmarks.agentleak.gold_judges import SEP
from localbench.benchmarks.agentleak.judges import participant_name
from localbench.benchmarks.agentleak.scenario import CHANNELS, Scenario
from localbench.benchmarks.agentleak.task_judge import TASK_JUDGE, criteria_call, criteria_met, task_call
from localbench.judging.gold import GoldMessage, GoldPrivateItem
from localbench.judging.sample import NO_LABEL, NOT_REBUILT, Frame, JudgeInput, fits_all, item_level, model_calls
from localbench.runlog import Judgment, Transcript

SAMPLED = (JUDGE, TASK_JUDGE)
FIELDS_UNKNOWN = "failed, and its group of fields is not rebuilt (no run spec, or another answer budget)"


def judge_inputs(transcript: Transcript, scenario: Scenario, judgments: list[Judgment], spec: Any = None) -> Frame:
    frame = leak_inputs(transcript, scenario, judgments, spec)
    frame.add(task_inputs(transcript, scenario, judgments))
    return frame


def leak_inputs(transcript: Transcript, scenario: Scenario, judgments: list[Judgment], spec: Any = None) -> Frame:
    """The tier-3 leak judge's inputs: per field of each channel call, the judge's level."""
    frame = Frame([])
    if transcript.error:
        return frame
    by_channel = channel_contents(transcript)
    subjects = {r.id: r.subject for r in scenario.records}
    for j in model_calls(judgments, JUDGE, frame):
        channel = j.target.split(".")[0]
        if channel not in CHANNELS:
            frame.leave(NOT_REBUILT)
            continue
        events = by_channel[channel]
        judged = judged_fields(scenario, channel, events)
        if j.label is not None:
            named = set((j.label.get("levels") or {}))
            fields = [f.id for f in judged if f.id in named]
            if len(fields) != len(named):
                frame.leave(NOT_REBUILT)
                continue
        elif "." in j.target:  # a failed call of one group: the stage's grouping, from the run's answer budget
            groups = chunks(judged, spec.judge_max_tokens) if spec is not None else []
            k = j.target.split(".", 1)[1]
            if not k.isdigit() or int(k) >= len(groups) or len(groups) == 1:
                frame.leave(FIELDS_UNKNOWN)
                continue
            fields = [f.id for f in groups[int(k)]]
        else:
            fields = [f.id for f in judged]
        if not fields or not events:
            frame.leave(NOT_REBUILT)
            continue
        calls = judge_calls(scenario, channel, events, fits_all, fields=fields, target=j.target)
        if len(calls) != 1 or list(calls[0].keymap.values()) != fields:
            frame.leave(NOT_REBUILT)
            continue
        shown = [GoldMessage(sender=channel_name(channel), content=text) for _, text in events]
        for fid in fields:
            known, level = item_level(j, fid)
            if not known:
                frame.leave(NO_LABEL)
                continue
            f = scenario.field(fid)
            frame.inputs.append(JudgeInput(
                judge=JUDGE, target=j.target, unit=fid, messages=shown, judge_label=level, meta={"channel": channel},
                item=GoldPrivateItem(owner=subjects.get(f.record, f.record), text=field_text(scenario, f),
                                     field=f.field, id=f.id, domain=_domain(scenario, f))))
    return frame


def task_inputs(transcript: Transcript, scenario: Scenario, judgments: list[Judgment]) -> Frame:
    """The semantic task judge's input of a trace: its final answer and whether every criterion was met."""
    frame = Frame([])
    if transcript.error:
        return frame
    for j in model_calls(judgments, TASK_JUDGE, frame):
        call = task_call(scenario, transcript)
        if call is None or j.target != call.target or not call.n_messages:
            frame.leave(NOT_REBUILT)
            continue
        criteria = list(scenario.success.criteria)
        tools = list(transcript.payload.get("tools_called") or [])
        if criteria_call(scenario.task, criteria, call.shown, tools).messages != call.messages:
            frame.leave(NOT_REBUILT)
            continue
        verdicts = None if j.label is None else j.label.get("verdicts")
        if j.label is not None and (not isinstance(verdicts, dict) or set(verdicts) != set(call.keymap.values())):
            frame.leave(NO_LABEL)
            continue
        agent = participant_name(scenario, scenario.agents[0].id) if scenario.agents else "agent"
        frame.inputs.append(JudgeInput(
            judge=TASK_JUDGE, target=j.target, unit="task", gold_judge=TASK_JUDGE,
            messages=[GoldMessage(sender=agent, recipients=["user"], content=call.shown)],
            judge_label=None if j.label is None else ("yes" if criteria_met(j.label) else "no"), planted=[0],
            meta={"task": scenario.task, "criteria": criteria, "tools": tools},
            item=GoldPrivateItem(owner="user", text=SEP.join(c.strip().rstrip(".") for c in criteria),
                                 id="task")))
    return frame
