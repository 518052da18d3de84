"""scores.json: every metric with its CI and n, per model × condition × category — the versioned
format the report, the notebook, the judge-reliability lab and Slurm merges all read.

One row per (metric, model, judge, condition, category[, group]). ``condition`` and ``category``
are the values of the benchmark's two axes (its design's condition and category axes); ``group``
refines a category (e.g. a source→target domain pair) for the metrics its catalogue marks grouped;
the category "ALL" pools every category of a condition. Metric names and directions are the
design's. Version 1 called ``condition`` ``level``; its rows are read under the new name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

SCORES_VERSION = 2
"""The format this code writes; version 1's rows named the condition ``level``."""


class ScoreRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    metric: str  # a name of the benchmark's metric catalogue
    model: str  # agent preset
    judge: str  # judge preset
    condition: str  # a value of the benchmark's condition axis
    category: str  # a value of its category axis, or ALL
    group: str = ""  # optional refinement, e.g. "health→social"
    mean: float | None  # None when n == 0
    ci_low: float | None
    ci_high: float | None
    n: int  # scenarios contributing a value
    n_failed: int = 0  # scenarios with no value because their simulations could not be scored
    n_failed_sims: int = 0  # simulations that could not be scored, also those of scenarios another seed kept
    higher_is_better: bool = False

    @model_validator(mode="before")
    @classmethod
    def _version_1(cls, data: Any) -> Any:
        """A version-1 row (``level``) read under version 2's name."""
        if isinstance(data, dict) and "level" in data and "condition" not in data:
            data = {("condition" if k == "level" else k): v for k, v in data.items()}
        return data


class PairedComparison(BaseModel):
    """A paired comparison between two conditions (same model) or two models (same condition): a sign-flip
    permutation test for the p-value and a bootstrap CI of the mean difference."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    category: str
    a: str  # the first condition, or a model
    b: str
    fixed: str  # the model (for condition comparisons) or the condition (for model comparisons)
    diff: float | None  # mean(b - a)
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    n_pairs: int
    test: str = "sign-flip"  # the p-value's test: sign-flip permutation, or mcnemar (0/1 outcomes)


SELF_JUDGING = "self_judging"  # a JudgeWarning's pattern when the judge is the model of the run's primary role


class JudgeWarning(BaseModel):
    """A degenerate pattern in one judge's answers across the run (``localbench.judging.sanity``).

    A warning, not an exclusion: the metrics computed from these labels are still reported; the
    report shows the warnings above its tables so that they are not read as findings.
    """

    model_config = ConfigDict(extra="forbid")

    judge: str  # the benchmark's judge (the Judgment.judge field), e.g. a behaviour judge
    judge_model: str  # the preset whose answers these are
    pattern: str  # "constant" | "contradiction" | "undefined" | "below_cheater_floor" (spec judge_eval) | SELF_JUDGING | UNMEASURED
    message: str  # one complete line: the judge, what was seen, with counts
    count: int  # simulations (or answers, see unit) showing the pattern
    total: int  # out of this many
    unit: str = "simulations"  # what count and total count: "simulations" or "answers"
    metrics: list[str] = Field(default_factory=list)  # metrics computed from these labels
    examples: list[str] = Field(default_factory=list)  # up to 3 simulation keys that show it


UNMEASURED = "unmeasured"  # a JudgeWarning's pattern when no gold eval measured a judge behind a metric


class Interval(BaseModel):
    """An estimate with its 95% interval (None where it is not defined)."""

    model_config = ConfigDict(extra="forbid")

    estimate: float | None  # the point estimate
    low: float | None = None  # the 95% interval's lower bound
    high: float | None = None  # its upper bound


class JudgeTrust(BaseModel):
    """One judge behind the run's metrics, as a gold eval measured it (or did not)."""

    model_config = ConfigDict(extra="forbid")

    judge: str  # the benchmark's judge (the Judgment.judge field)
    judge_model: str  # the preset whose labels these are
    measured: bool  # a gold eval (the spec's judge_eval) measured this judge with this preset
    metrics: list[str] = Field(default_factory=list)  # the run's metrics computed from its labels
    eval: str = ""  # the eval directory that measured it
    gold: str = ""  # what the eval's gold items are: "constructed", "real-transcript" or a mix (eval.json's gold_origin)
    n_gold: int = 0  # gold items it was measured on
    verdict: str = ""  # the eval's grade: "use as is" | "use with correction" | "do not use" | ...
    verdict_text: str = ""  # the eval's verdict line
    fpr: Interval | None = None  # says leak where gold says none
    fnr: Interval | None = None  # says none where gold says leak
    binary_kappa: Interval | None = None


class CorrectedMetric(BaseModel):
    """A headline metric of one (model, condition, category) beside its Rogan–Gladen correction."""

    model_config = ConfigDict(extra="forbid")

    metric: str
    model: str
    condition: str
    category: str
    judge: str  # the benchmark judge whose error rates correct it
    judge_model: str
    raw: Interval  # the metric as scored (its scores.json row)
    units: int = 0  # leakage units pooled (``Benchmark.leak_units``), n of the observed share
    leaked: int = 0  # of which the judge labelled leaked
    n_scenarios: int = 0
    observed: float | None = None  # the metric as the pooled unit share (leaked / units, or 1 − that)
    corrected: Interval | None = None  # None: not identified, or no correction (see status and note)
    status: str = ""  # "corrected" | "not identified" | "unmeasured" | "no correction"
    note: str = ""


class Trust(BaseModel):
    """How far to trust the run's numbers: every judge behind a metric, measured or not, and each
    headline metric corrected with its judge's measured error rates (``localbench.judging.trust``)."""

    model_config = ConfigDict(extra="forbid")

    evals: list[str] = Field(default_factory=list)  # the judge_eval directories read
    judges: list[JudgeTrust] = Field(default_factory=list)
    metrics: list[CorrectedMetric] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


class Scores(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = SCORES_VERSION
    run_id: str
    benchmark: str
    bootstrap: dict[str, Any] = Field(default_factory=dict)  # n_resamples, confidence, seed
    rows: list[ScoreRow] = Field(default_factory=list)
    comparisons: list[PairedComparison] = Field(default_factory=list)
    failures: dict[str, int] = Field(default_factory=dict)  # judge name -> failed calls
    notes: list[str] = Field(default_factory=list)
    judge_warnings: list[JudgeWarning] = Field(default_factory=list)  # degenerate judge answers (not exclusions)
    # Simulations the spec lists that have no transcript (deleted, never run, or stopped by engine
    # errors), per category; with how many the spec lists in all. Written only when some are
    # missing (a complete run's scores.json is as before).
    missing_simulations: dict[str, int] = Field(default_factory=dict)
    planned_simulations: int | None = None
    trust: Trust | None = None  # the judges' measurement and corrected headline metrics (written when computed)

    def write(self, path: str | Path) -> None:
        from localbench.files import write_atomic

        data = {**self.model_dump(), "version": SCORES_VERSION}  # a version-1 file read is written upgraded
        if not data["missing_simulations"]:
            del data["missing_simulations"], data["planned_simulations"]
        if not data["judge_warnings"]:  # a run whose judges show no degenerate pattern: as before
            del data["judge_warnings"]
        if data["trust"] is None:
            del data["trust"]
        write_atomic(Path(path), json.dumps(data, indent=1, ensure_ascii=False))

    @classmethod
    def read(cls, path: str | Path) -> "Scores":
        return cls.model_validate_json(Path(path).read_text())

    def get(self, metric: str, **where: str) -> list[ScoreRow]:
        return [r for r in self.rows if r.metric == metric and all(getattr(r, k) == v for k, v in where.items())]
