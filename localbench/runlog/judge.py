"""The same-judge rule: a run is judged, rejudged against and scored with the judge its judge stage
recorded in spec.yaml (a judge chosen with `localbench judge RUN --judge X` is not part of the
run's spec), else the spec's own."""

from __future__ import annotations

from typing import Any

from localbench.runlog.rundir import RunDir
from localbench.spec import RunSpec


def recorded_judge(doc: dict[str, Any]) -> str | None:
    """The judge model a spec.yaml document's judge section names, if any."""
    return (doc.get("judge") or {}).get("model") or None


def judge_of(spec: RunSpec, run: RunDir) -> str:
    """The judge a run's scores are labelled with: the one its judge stage recorded, else the spec's."""
    recorded = recorded_judge(run.read_spec() or {}) if run.spec_file.exists() else None
    return recorded or spec.judge_model


def same_judge(spec: RunSpec, run: RunDir) -> bool:
    """Whether judging with the spec's judge goes on with the run's own (a fresh run: yes)."""
    return judge_of(spec, run) == spec.judge_model


def resume_judge(spec: RunSpec, run: RunDir) -> RunSpec:
    """The spec a judge stage runs: with no judge named in it, the recorded one goes on
    (`localbench judge RUN --judge X`, then `localbench run` or `localbench judge RUN`, resumes X)."""
    role = spec.design.judge_role
    if spec.models.get(role) is None and not same_judge(spec, run):
        return spec.with_model(role, judge_of(spec, run))
    return spec
