"""Sanity checks on a run's judges: degenerate answer patterns, found in the score stage.

A small judge can answer without reading: the same answer for every simulation, flags that
contradict each other set together, a quality score that contradicts its own yes/no, or "n/a"
everywhere. The metrics computed from such labels look like results. The score stage runs these
checks over the run's judgments and stores what it finds in scores.json (``judge_warnings``, see
``localbench.scores.JudgeWarning``); the report shows them above its tables. They are warnings,
never exclusions: nothing is dropped from the scores.

Generic here: **constant answer** — every judge (except those a benchmark exempts, e.g. a leakage
judge whose "no leak" everywhere can be a true result) whose answers, free-text fields and "n/a"
left out, are identical in every simulation, once it has answered at least ``MIN_SIMULATIONS``.
A benchmark declares the rest (``Benchmark.judge_checks()``): which answers contradict themselves
(``Contradiction``, warned from ``CONTRADICTION_SHARE`` of simulations) and which scores may be
"n/a" (``Undefined``, warned from ``UNDEFINED_SHARE`` of answers), with the metrics they feed.

And one about the run, not the answers: **self-judging** — the judge is the model of the run's
primary role (the default when no judge is given), so a model grades transcripts it wrote and may
favour them. The judge stage says so when it starts, ``localbench run`` in its closing lines, and the
score stage stores it as a warning whose metrics (every one a model judged) the report marks. A run
with no judge, a rule judge, a synthetic judge or a scripted player is not self-judging.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Optional

from localbench.runlog import Judgment
from localbench.scores import SELF_JUDGING, JudgeWarning
from localbench.spec import NO_JUDGE, RunSpec

MIN_SIMULATIONS = 5  # a constant answer over fewer simulations says little
CONTRADICTION_SHARE = 0.1  # warn when at least this share of simulations contradicts itself
UNDEFINED_SHARE = 0.9  # warn when at least this share of a judge's scores is "n/a"
MIN_UNDEFINED = 10  # ... out of at least this many scores
EXAMPLES = 3


@dataclass(frozen=True)
class Contradiction:
    """Answers of one judge that contradict themselves. ``test(label)`` says how (a short phrase,
    e.g. "oversharing + minimal_disclosure"), or None when the label is consistent."""

    judge: str
    what: str  # the pattern, in words: "flags that contradict each other set together"
    test: Callable[[dict[str, Any]], str | None]
    metrics: tuple[str, ...] = ()


@dataclass(frozen=True)
class Undefined:
    """Scores of one judge that may be "n/a" (None). ``values(label)`` lists one answer's scores."""

    judge: str
    what: str  # "abstraction scores"
    values: Callable[[dict[str, Any]], list[Any]]
    metrics: tuple[str, ...] = ()


@dataclass(frozen=True)
class JudgeChecks:
    """What a benchmark declares about its judges' answers (``Benchmark.judge_checks()``)."""

    constant_exempt: tuple[str, ...] = ()  # judges for which one answer everywhere can be a real result
    free_text: tuple[str, ...] = ("evidence", "justification", "text", "reason", "truncated")
    contradictions: tuple[Contradiction, ...] = ()
    undefined: tuple[Undefined, ...] = ()
    metrics: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # judge -> the metrics it feeds


def _answers(judgments: Iterable[Judgment]) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """judge -> simulation -> the labels of its answered calls (failures and rule labels left out)."""
    out: dict[str, dict[str, list[dict[str, Any]]]] = defaultdict(lambda: defaultdict(list))
    for j in judgments:
        if j.failure or j.label is None or j.judge_model == "rule":
            continue
        out[j.judge][j.sim_key].append(j.label)
    return out


def _leaves(value: Any, free: tuple[str, ...], path: str = "") -> dict[str, Any]:
    """A label's answers as {path: value}, free text and "n/a" (None) left out."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            if k in free:
                continue
            out.update(_leaves(v, free, f"{path}.{k}" if path else str(k)))
        return out
    if value is None:
        return {}
    return {path: value}


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _constant(judge: str, model: str, sims: dict[str, list[dict[str, Any]]], checks: JudgeChecks) -> JudgeWarning | None:
    answers: dict[str, dict[str, Any]] = {}
    for sim, labels in sims.items():
        merged: dict[str, Any] = {}
        for lab in labels:
            merged.update(_leaves(lab, checks.free_text))
        if merged:
            answers[sim] = merged
    if len(answers) < MIN_SIMULATIONS:
        return None
    common = set.intersection(*(set(a) for a in answers.values()))
    if not common:
        return None  # answers about different things (per-item labels): nothing to compare
    first = next(iter(answers.values()))
    if not all(_same(a[k], first[k]) for a in answers.values() for k in common):
        return None
    values = {json.dumps(first[k]) for k in common}
    shown = (f"every field {values.pop()}" if len(values) == 1 and len(common) > 1
             else ", ".join(f"{k} = {json.dumps(first[k])}" for k in sorted(common)[:4])
             + (" …" if len(common) > 4 else ""))
    n = len(answers)
    return JudgeWarning(judge=judge, judge_model=model, pattern="constant", count=n, total=n,
                        metrics=list(checks.metrics.get(judge, ())), examples=sorted(answers)[:EXAMPLES],
                        message=f"{judge} judge ({model}) gave the same answer in all {n} simulations it answered "
                                f"({shown}): it does not tell the simulations apart")


def _contradiction(c: Contradiction, model: str, sims: dict[str, list[dict[str, Any]]]) -> JudgeWarning | None:
    hits: dict[str, str] = {}
    for sim, labels in sims.items():
        for lab in labels:
            why = c.test(lab)
            if why:
                hits[sim] = why
                break
    n = len(sims)
    if not hits or len(hits) < max(1, math.ceil(CONTRADICTION_SHARE * n)):
        return None
    kinds = sorted(set(hits.values()))
    return JudgeWarning(judge=c.judge, judge_model=model, pattern="contradiction", count=len(hits), total=n,
                        metrics=list(c.metrics), examples=sorted(hits)[:EXAMPLES],
                        message=f"{c.judge} judge ({model}): {c.what} ({'; '.join(kinds[:3])}"
                                f"{' …' if len(kinds) > 3 else ''}) in {len(hits)} of {n} simulations")


def _undefined(u: Undefined, model: str, sims: dict[str, list[dict[str, Any]]]) -> JudgeWarning | None:
    values = {sim: [v for lab in labels for v in u.values(lab)] for sim, labels in sims.items()}
    total = sum(len(v) for v in values.values())
    na = sum(v is None for vs in values.values() for v in vs)
    if total < MIN_UNDEFINED or na < UNDEFINED_SHARE * total:
        return None
    all_na = sorted(s for s, vs in values.items() if vs and all(v is None for v in vs))
    metrics = " and ".join(u.metrics) or "its metrics"
    tail = (f"; {metrics} {'is' if len(u.metrics) < 2 else 'are'} undefined in {len(all_na)} of the "
            f"{len(values)} simulations it scored" if all_na else "")
    return JudgeWarning(judge=u.judge, judge_model=model, pattern="undefined", count=na, total=total, unit="answers",
                        metrics=list(u.metrics), examples=all_na[:EXAMPLES],
                        message=f"{u.judge} judge ({model}): {na} of {total} {u.what} are n/a{tail}")


def check_judgments(judgments: Iterable[Judgment], checks: JudgeChecks, judge_model: str = "") -> list[JudgeWarning]:
    """Every degenerate pattern in a run's judgments (see the module docstring), in a fixed order."""
    judgments = list(judgments)
    answers = _answers(judgments)
    models: dict[str, str] = {}
    for j in judgments:
        if j.judge_model and j.judge_model != "rule":
            models.setdefault(j.judge, j.judge_model)
    out: list[JudgeWarning] = []
    for judge in sorted(answers):
        model = models.get(judge, judge_model)
        sims = answers[judge]
        if judge not in checks.constant_exempt:
            w = _constant(judge, model, sims, checks)
            if w:
                out.append(w)
        for c in checks.contradictions:
            if c.judge == judge and (w := _contradiction(c, model, sims)):
                out.append(w)
        for u in checks.undefined:
            if u.judge == judge and (w := _undefined(u, model, sims)):
                out.append(w)
    return out


Scripted = Callable[[str], Optional[Any]]  # a benchmark's ``scripted_backend``: preset -> backend or None


def _preset_name(name: str) -> str:
    """The name inside a preset (a preset given as a file's path reads as the name it holds)."""
    from localbench.serving.presets import PresetError, load_preset

    try:
        return load_preset(name).name
    except (PresetError, OSError, ValueError):
        return name


def self_judging(spec: RunSpec, judge: str | None = None, scripted: Scripted | None = None,
                 agent: str | None = None) -> bool:
    """Whether ``judge`` (default: the spec's) is the model that plays the spec's primary role
    (``agent``: that model, where the run plan already looked it up)."""
    from localbench.judging.synthetic import is_synthetic

    judge = judge or spec.judge_model
    agent = agent or spec.model_for(spec.design.primary_role)
    if judge in (NO_JUDGE, "rule") or spec.rule_judge or is_synthetic(judge):
        return False
    if scripted is not None and (scripted(judge) is not None or scripted(agent) is not None):
        return False
    return judge == agent or _preset_name(judge) == _preset_name(agent)


def self_judging_message(spec: RunSpec, judge: str | None = None, scripted: Scripted | None = None,
                         agent: str | None = None) -> str | None:
    """The one line that says a run is self-judging (see the module docstring), or None."""
    if not self_judging(spec, judge, scripted, agent):
        return None
    return (f"self-judging: the judge ({judge or spec.judge_model}) is also the {spec.design.primary_role}'s model "
            "(the default when no judge is given), so it grades transcripts it wrote and may favour them; give "
            "another model as the judge (--judge PRESET), or measure this one against gold (`localbench judges eval`)")


def self_judging_warning(spec: RunSpec, judgments: Iterable[Judgment], checks: JudgeChecks, judge: str | None = None,
                         scripted: Scripted | None = None, agent: str | None = None) -> JudgeWarning | None:
    """The score stage's warning for a self-judging run: its metrics, once a model has judged, are the
    design's leakage metrics and those the benchmark declares for each judge that answered (rule
    labels are not a model's); a run its judge never answered is still warned, with nothing marked."""
    message = self_judging_message(spec, judge, scripted, agent)
    if message is None:
        return None
    judged = [j for j in judgments if j.judge_model not in ("", "rule")]
    answered = {j.judge for j in judged}
    metrics = [m.name for m in spec.design.metrics if m.leakage] if judged else []
    metrics += [m for j in sorted(answered) for m in checks.metrics.get(j, ()) if m not in metrics]
    n = len({j.sim_key for j in judged})
    return JudgeWarning(judge=spec.design.judge_role, judge_model=judge or spec.judge_model, pattern=SELF_JUDGING,
                        message=message, count=n, total=n, metrics=metrics)
