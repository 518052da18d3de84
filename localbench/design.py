"""What a benchmark declares about itself: its axes, roles, metrics, defaults and settings.

A benchmark (``localbench.benchmarks.Benchmark``) carries a ``design``, the typed declaration every
shared layer reads instead of naming the benchmark's categories, conditions, metrics or roles: the
spec takes its default conditions, roles, round limits and settings model from it, the score stage
its metric catalogue, the CLI its embedded default run, Slurm planning and prefetch its roles, and
the report its title and glossary.

A leaf: plain data, importing nothing of localbench's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

ALL = "ALL"
"""The value a pooled axis takes in a scores row that pools every value of it."""


@dataclass(frozen=True)
class Axis:
    """One experimental axis: a key of every scores row.

    ``kind``: the one ``condition`` axis is what a simulation runs under (the spec's ``conditions``,
    the ``condition`` of every record and scores row; paired comparisons run across it); the one ``category`` axis groups scenarios (the spec's
    ``categories``, ``limit`` per category and ``max_rounds`` per category).
    """

    name: str  # the benchmark's own word for it ("level", "attacker", "vertical")
    label: str  # for tables and figures ("Privacy level")
    kind: Literal["condition", "category"]
    values: tuple[str, ...] = ()  # known values in display order; others follow in first-seen order
    default: tuple[str, ...] = ()  # condition axis: what a spec without `conditions` runs
    flag: str = ""  # condition axis: the benchmark's own name for `--conditions` (`--attackers`), an alias
    help: str = ""  # condition axis: what its values are, for `localbench run --help`
    aliases: Mapping[str, str] = field(default_factory=dict)
    """condition axis: other names a value is accepted under (a paper's) -> the value the spec records."""

    def order(self, seen: list[str]) -> list[str]:
        """``seen`` values in this axis's display order, unknown ones after in their own order."""
        known = [v for v in self.values if v in seen]
        return known + [v for v in dict.fromkeys(seen) if v not in self.values]


@dataclass(frozen=True)
class Role:
    """A model a run needs: a key of the spec's ``models``.

    ``default`` names the role whose preset it takes when the spec gives none (the primary role,
    the first declared, falls back to the packaged default model).
    """

    name: str
    description: str
    default: str | None = None
    judge: bool = False  # the judge stage's model (exactly one role)
    simulation: bool = True  # opened by the simulate stage (the judge role is not)
    rules: Mapping[str, str] = field(default_factory=dict)
    """Judges that need no model (name -> what it does): ``--judge NAME`` sets ``extra.judge``, not a preset."""


@dataclass(frozen=True)
class Metric:
    """One entry of the metric catalogue."""

    name: str
    description: str = ""
    higher_is_better: bool = False
    unit: Literal["rate", "percent", "count", "score"] = "rate"
    leakage: bool = False  # computed from the leakage judges' labels (`judges rejudge` recomputes it)
    pooled: bool = False  # also reported over every category pooled (category ALL)
    grouped: bool = False  # also reported per group (a refinement of a category a simulation carries)
    glossary: bool = True  # listed in the report's glossary
    interval: Literal["bootstrap", "wilson"] = "bootstrap"
    """bootstrap: a percentile bootstrap over scenarios (their seeds averaged first); wilson: a
    proportion over simulations (the metric is 0/1 per simulation), Wilson's score interval."""
    judges: tuple[str, ...] = ()
    """The benchmark judges whose labels it is computed from (a Judgment's ``judge`` field); empty: a
    rule computes it, or it needs no judge. The report's "How far to trust these numbers" says for
    each of them whether a gold eval measured it (the spec's ``judge_eval``) and marks the metric where not."""
    correction: Literal["", "leak_rate", "no_leak_rate"] = ""
    """How its judge's measured error rates correct it (Rogan–Gladen): ``leak_rate``, it is a share of
    the leaked units ``Benchmark.leak_units`` gives; ``no_leak_rate``, one minus such a share; "": no
    correction is defined (the report says so)."""

    @property
    def decimals(self) -> int:
        return 1 if self.unit == "percent" else 2


class NoSettings(BaseModel):
    """The settings of a benchmark that has none of its own: the spec's ``extra`` must be empty."""

    model_config = ConfigDict(extra="forbid")


@dataclass(frozen=True)
class Design:
    """A benchmark's declaration (see the module docstring)."""

    name: str  # registry name, spec.benchmark
    title: str  # "AgentSocialBench"
    axes: tuple[Axis, ...]
    roles: tuple[Role, ...]
    metrics: tuple[Metric, ...]
    headline: Mapping[str, str]  # category -> the metric models are ranked and compared by
    embedded_default: Mapping[str, Any] = field(default_factory=dict)  # `localbench run` with no arguments
    max_rounds: Mapping[str, int] = field(default_factory=dict)  # category -> default round limit
    settings: type[BaseModel] = NoSettings
    """Its own settings (the spec's ``extra``): a pydantic model, validated when the spec is read;
    ``extra="forbid"`` in its config makes a misspelt setting an error naming it."""
    paired_test: Literal["sign-flip", "mcnemar"] = "sign-flip"
    """How two conditions (or models) are compared on the same scenarios: a sign-flip permutation test
    of the per-scenario differences, or McNemar's test on 0/1 outcomes paired by simulation."""
    paired_metrics: tuple[tuple[str, str], ...] = ()
    """Two metrics of the same simulations to compare (e.g. leaks in the final output vs between
    agents), per model and condition over every category, with the same paired test."""

    def __post_init__(self) -> None:
        kinds = [a.kind for a in self.axes]
        if kinds.count("condition") != 1 or kinds.count("category") != 1:
            raise ValueError(f"design '{self.name}': needs exactly one condition axis and one category axis")
        if sum(r.judge for r in self.roles) != 1:
            raise ValueError(f"design '{self.name}': exactly one role must be the judge")
        names = [r.name for r in self.roles]
        for r in self.roles:
            if r.default is not None and r.default not in names:
                raise ValueError(f"design '{self.name}': role '{r.name}' defaults to unknown role '{r.default}'")
        unknown = sorted(set(self.headline.values()) - {m.name for m in self.metrics})
        if unknown:
            raise ValueError(f"design '{self.name}': headline metrics {unknown} are not in its catalogue")

    # -- axes ----------------------------------------------------------------------------------
    @property
    def condition(self) -> Axis:
        return next(a for a in self.axes if a.kind == "condition")

    @property
    def category(self) -> Axis:
        return next(a for a in self.axes if a.kind == "category")

    @property
    def categories(self) -> tuple[str, ...]:
        return self.category.values

    # -- roles ---------------------------------------------------------------------------------
    @property
    def primary_role(self) -> str:
        """The role a run's scores are labelled with (the model under test)."""
        return self.roles[0].name

    @property
    def judge_role(self) -> str:
        return next(r.name for r in self.roles if r.judge)

    @property
    def simulation_roles(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.roles if r.simulation and not r.judge)

    def role(self, name: str) -> Role:
        for r in self.roles:
            if r.name == name:
                return r
        raise KeyError(f"benchmark '{self.name}' has no role '{name}' (roles: {', '.join(self.role_names)})")

    @property
    def role_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.roles)

    # -- metrics -------------------------------------------------------------------------------
    def metric(self, name: str) -> Metric:
        """The catalogue entry of ``name``; an unknown name (a metric a newer judge emits) reads
        as a lower-is-better rate with no description."""
        for m in self.metrics:
            if m.name == name:
                return m
        return Metric(name)

    def higher_is_better(self, name: str) -> bool:
        return self.metric(name).higher_is_better

    def is_leakage(self, name: str) -> bool:
        return self.metric(name).leakage

    @property
    def pooled_metrics(self) -> tuple[str, ...]:
        return tuple(m.name for m in self.metrics if m.pooled)
