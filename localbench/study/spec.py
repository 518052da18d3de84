"""A study file (``study.yaml``): several models under test across the benchmarks, one judge per
benchmark, as one validated object that resolves to one ordinary RunSpec per (benchmark, model).

Why a file of its own: the papers' results are comparisons of models, and a study of five models
× three benchmarks is fifteen runs whose specs differ only in the model under test. A study names
that once; each run's spec is built here, so its run id (the hash of its result fields) is the same
whenever the study is read again: a second ``study run`` resumes, and adding a model adds only its
runs.

Fields:

- ``models``: the presets under test, in the order tables list them;
- ``benchmarks``: benchmark name -> its runs' fields: any RunSpec field (``conditions``,
  ``scenarios``, ``categories``, ``limit``, ``seeds``, ``max_rounds``, ``max_tokens``, ``extra``,
  ...) but ``benchmark``, ``out``, ``run_id`` and ``models``, plus ``judge`` (the benchmark's
  judge; else the study's), ``roles`` (presets of its other roles, the same for every model: a
  fixed simulated user, say) and ``overrides`` (model -> fields for that model's run alone);
- ``judge``: the judge of every benchmark that names none;
- ``allow_self_judging``: a judge that is also a model under test is refused unless this is true;
  then its numbers are marked in every table (``compare``);
- ``serving``, ``seed``: as in a RunSpec, for every run;
- ``out``: where the runs go, relative to the study file (default: ``runs`` beside it);
- ``slurm``: sbatch options for ``study submit`` (each run's ``slurm:``; ``slurm.judge_server``: the
  resources of the judge server jobs, see ``localbench.slurm.study``).

Every error of the file is collected and raised at once (StudyError), each named by its field.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from localbench.errors import UserError, field_errors

RUN_FIELDS_NOT_IN_A_STUDY = ("benchmark", "out", "run_id", "models")


class StudyError(UserError):
    """A study file that does not validate: every problem, one per line, each naming its field."""


class BenchmarkPart(BaseModel):
    """One benchmark of a study: its runs' fields, its judge, its other roles, per-model overrides."""

    model_config = ConfigDict(extra="allow")  # the rest are RunSpec fields, checked by building the runs

    judge: str | None = None  # the benchmark's judge preset (`none`: no judge, where the benchmark scores without one); else the study's
    roles: dict[str, str] = Field(default_factory=dict)  # presets of the benchmark's other roles, the same for every model (a fixed simulated user)
    overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)  # model -> RunSpec fields for that model's run alone

    def run_fields(self) -> dict[str, Any]:
        return dict(self.model_extra or {})


class Study(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = None  # the study's name in tables and logs (default: the file's name)
    models: list[str] = Field(min_length=1)  # the presets under test, in the order tables list them
    # benchmark name -> its runs' RunSpec fields (conditions, scenarios, categories, limit, seeds,
    # max_rounds, max_tokens, extra, ...; not benchmark, out, run_id, models) and judge, roles, overrides
    benchmarks: dict[str, BenchmarkPart] = Field(min_length=1)
    judge: str | None = None  # the judge preset of every benchmark that names none
    allow_self_judging: bool = False  # let a model under test judge (its own transcripts among them); its numbers are marked in every table
    serving: dict[str, Any] = Field(default_factory=dict)  # `serving:` of every run (a benchmark's own `serving:` adds to it)
    seed: int | None = None  # every run's seed, unless its benchmark sets one
    out: str = "runs"  # the folder the runs go in, relative to the study file
    slurm: dict[str, Any] = Field(default_factory=dict)  # every run's `slurm:` (a benchmark's own adds to it); `judge_server:` the judge servers' resources
    path: Path | None = Field(default=None, exclude=True)  # the file it was read from

    @property
    def title(self) -> str:
        return self.name or (self.path.stem if self.path else "study")

    @property
    def out_dir(self) -> Path:
        """Where its runs go: ``out`` beside the study file (a study runs from any folder)."""
        base = self.path.parent if self.path else Path.cwd()
        return (base / self.out).resolve()

    def judge_of(self, benchmark: str) -> str | None:
        return self.benchmarks[benchmark].judge or self.judge


def read_study(path: str | Path) -> "Study":
    """A study file's own fields, checked (StudyError lists every problem); ``plan.plan_runs`` then
    builds and checks its runs, every problem of every run in one pass."""
    from localbench.spec import read_yaml_fields

    p = Path(path)
    data = read_yaml_fields(p, "study file", StudyError)
    try:
        return Study.model_validate({**data, "path": p.resolve()})
    except ValidationError as e:
        raise StudyError(f"{p}: {len(e.errors())} problem(s):\n" + "\n".join(field_errors(e))) from e
