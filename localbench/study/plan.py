"""A study's runs: one RunSpec per (benchmark, model), built from the study file, checked together.

Each run is an ordinary run: its own directory under the study's ``out``, its id the hash of its
result fields (so reading the study again gives the same ids, and a second ``study run`` resumes).
Every problem of every run is collected, so one pass names them all.
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from localbench.errors import UserError, field_errors
from localbench.runtime.plan import RunPlan
from localbench.spec import NO_JUDGE, RunSpec, SpecError
from localbench.study.spec import RUN_FIELDS_NOT_IN_A_STUDY, Study, StudyError, read_study


@dataclass(frozen=True)
class PlannedRun:
    """One (benchmark, model) run of a study; ``plan``: its run plan (``runtime.plan``), once `study
    run` has planned it on this machine (checking a study, or comparing its runs, plans no engine)."""

    benchmark: str
    model: str
    spec: RunSpec
    plan: RunPlan | None = dataclass_field(default=None, compare=False)

    @property
    def run_dir(self) -> Path:
        return self.spec.run_dir

    @property
    def judge(self) -> str:
        return self.spec.judge_model

    @property
    def self_judged(self) -> bool:
        """The model under test judges its own transcripts."""
        return self.judge == self.model


def _run_spec(study: Study, benchmark: str, model: str) -> RunSpec:
    from localbench.registry import design_of

    part = study.benchmarks[benchmark]
    fields: dict[str, Any] = {**part.run_fields(), **part.overrides.get(model, {})}
    design = design_of(benchmark)
    models = {**part.roles, design.primary_role: model}
    judge = study.judge_of(benchmark)
    if judge is not None:
        models[design.judge_role] = judge
    elif study.allow_self_judging:
        models[design.judge_role] = model  # said out loud: the model judges itself (marked in every table)
    data = {**fields, "benchmark": benchmark, "models": models, "out": str(study.out_dir)}
    if study.serving:
        data["serving"] = {**study.serving, **fields.get("serving", {})}
    if study.seed is not None and "seed" not in fields:
        data["seed"] = study.seed
    if study.slurm:
        data["slurm"] = {**study.slurm, **fields.get("slurm", {})}
    return RunSpec.model_validate(data)


def plan_runs(study: Study) -> list[PlannedRun]:
    """Every run of the study, benchmark by benchmark in the file's order, models in theirs; a
    StudyError listing every problem (unknown benchmark or role, a bad run field, an unknown
    preset, a judge that is a model under test without ``allow_self_judging``)."""
    from localbench.registry import UnknownBenchmark, design_of, get_benchmark
    from localbench.serving.presets import load_preset

    problems: list[str] = []
    for name in dict.fromkeys([*study.models, study.judge, *(p.judge for p in study.benchmarks.values())]):
        if name is None or name == NO_JUDGE:
            continue
        try:
            load_preset(name)
        except UserError as e:
            where = "models" if name in study.models else "judge"
            problems.append(f"field '{where}': {e}")
    runs: list[PlannedRun] = []
    for benchmark, part in study.benchmarks.items():
        where = f"benchmarks.{benchmark}"
        try:
            design = design_of(benchmark)
        except UnknownBenchmark as e:
            problems.append(f"field '{where}': {e}")
            continue
        for field in RUN_FIELDS_NOT_IN_A_STUDY:
            if field in part.run_fields():
                problems.append(f"field '{where}.{field}': set by the study (models under test, its out folder), "
                                "not per benchmark")
        for model in part.overrides:
            if model not in study.models:
                problems.append(f"field '{where}.overrides.{model}': not a model of the study ({', '.join(study.models)})")
        for role in part.roles:
            if role in (design.primary_role, design.judge_role) or role not in design.role_names:
                problems.append(f"field '{where}.roles.{role}': roles takes {design.title}'s other roles "
                                f"({', '.join(r for r in design.role_names if r not in (design.primary_role, design.judge_role)) or 'none'}); "
                                "the models under test and the judge have fields of their own")
        judge = study.judge_of(benchmark)
        if judge is None and not study.allow_self_judging:
            problems.append(f"field '{where}.judge': no judge for {design.title} (set `judge:` for the study or the "
                            "benchmark); without one each model would judge its own transcripts, which the study "
                            "refuses unless `allow_self_judging: true`")
        elif judge in study.models and not study.allow_self_judging:
            problems.append(f"field '{where}.judge': '{judge}' is also a model under test, so it would judge its own "
                            "transcripts; choose another judge or set `allow_self_judging: true` (its numbers are then "
                            "marked in every table)")
        simulator = get_benchmark(benchmark).simulator()
        for model in study.models:
            try:
                spec = _run_spec(study, benchmark, model)
                simulator.check(spec)  # what the simulate stage would refuse (an unknown condition, say)
                runs.append(PlannedRun(benchmark, model, spec))
            except ValidationError as e:
                problems += [f"{line} (run {benchmark} × {model})" for line in field_errors(e, f"{where}.")]
            except (SpecError, ValueError) as e:
                problems.append(f"field '{where}': {e} (run {benchmark} × {model})")
    if problems:
        unique = list(dict.fromkeys(problems))
        raise StudyError(f"{study.path or 'study'}: {len(unique)} problem(s):\n" + "\n".join(unique))
    return runs


def study_run_dirs(path: str | Path) -> list[Path]:
    """The run directories of a study's runs that exist (``compare STUDY.yaml`` reads these)."""
    return [r.run_dir for r in plan_runs(read_study(path)) if r.run_dir.is_dir()]


__all__ = ["PlannedRun", "plan_runs", "study_run_dirs", "StudyError"]
