"""SopriBench's real judge inputs for `localbench judges sample`: the granularity judge's call rebuilt from
a simulation, one input per leaked attribute the attacker answered.

The call is rebuilt by the judge stage's own builder (``judges.granularity_call`` over the transcript's
answer); a labeller sees the answer as the shipped gold shows a guess (``slot = value``) against the truth
written to the depth the posts reveal (``revealed_truth``; the run's judge reads the whole ladder with
its levels), and the judge's grade is read as none / partial / full the way PES counts it
(``gold_label``: wrong, coarser than revealed, as deep). The gold id carries the slot and depth, so
`judges eval` asks the granularity judge as for the shipped gold.
"""

from __future__ import annotations

import hashlib
from typing import Any

from localbench.benchmarks.sopri.judge_stage import answers_of
from localbench.benchmarks.sopri.judges import (GRANULARITY_JUDGE, gold_id, gold_label, granularity_call,
                                                revealed_truth)
from localbench.benchmarks.sopri.scenario import User
from localbench.judging.gold import GoldMessage, GoldPrivateItem
from localbench.judging.sample import NO_LABEL, NOT_REBUILT, Frame, JudgeInput, model_calls
from localbench.runlog import Judgment, Transcript

SAMPLED = (GRANULARITY_JUDGE,)


def judge_inputs(transcript: Transcript, user: User, judgments: list[Judgment], spec: Any = None) -> Frame:
    frame = Frame([])
    if transcript.error:
        return frame
    for j in model_calls(judgments, GRANULARITY_JUDGE, frame):
        answers = answers_of(transcript)
        leaked = {a.slot: a for a in user.leaked if a.slot in answers}
        if not leaked:
            frame.leave(NOT_REBUILT)
            continue
        call = granularity_call(user, answers, target=j.target)
        tag = "transcript-" + hashlib.sha256(f"{transcript.key}|{j.target}".encode()).hexdigest()[:10]
        for key, slot in call.keymap.items():
            a = leaked[slot]
            grade = None if j.label is None else (j.label.get("levels") or {}).get(key)
            if j.label is not None and grade is None:
                frame.leave(NO_LABEL)
                continue
            depth, truth = revealed_truth(a)
            frame.inputs.append(JudgeInput(
                judge=GRANULARITY_JUDGE, target=j.target, unit=slot, gold_id=gold_id(user.id, a, tag),
                judge_label=None if grade is None else gold_label(slot, depth, grade), meta={"depth": depth, "grade": grade},
                messages=[GoldMessage(sender="guess", content=f"{slot.replace('_', ' ')} = {answers[slot].value}")],
                item=GoldPrivateItem(owner=user.nickname, text=truth, field=slot, id=slot)))
    return frame
