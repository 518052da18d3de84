"""The benchmark contract: what a benchmark gives the shared layers, with defaults for the optional parts.

A benchmark is a subclass of ``Benchmark`` registered as an entry point (``localbench.registry``).
It must say what its scenarios are (``load_scenarios``, ``check_source``, ``category_of``), how to
play one (``simulator``), how to judge and score a run (``rubric_files``, ``judge_tasks``,
``scenario_scores``) and how the viewer shows a simulation (``view_simulation``); its ``design``
(``localbench.design``) declares its axes, roles, metrics, defaults and typed settings. Everything
else is an optional capability declared here with a default that says "this benchmark has none":
scripted players, gold sets, planted runs, a scenario generator, report tables, judge checks. The
shared layers call these methods; they never ask whether one exists.

Layers below (judging/, runtime/, serving/) never import a benchmark; they are handed what they
need (an ``ItemJudge``, a list of ``JudgeTask``s, a ``Simulator``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from pkgutil import resolve_name
from typing import TYPE_CHECKING, Any, ClassVar, Iterable, Mapping, Protocol, Sequence

from localbench.design import Design
from localbench.errors import UserError

if TYPE_CHECKING:
    from localbench.judging.calls import ItemJudge
    from localbench.judging.gold import GoldItem
    from localbench.judging.runner import JudgeTask
    from localbench.judging.sanity import JudgeChecks
    from localbench.judging.sample import Frame
    from localbench.runlog import Judgment, RecordStore, ScenarioScore, Transcript
    from localbench.report.plan import ReportPlan
    from localbench.runtime.harness import Simulator
    from localbench.serving.client import StructuredClient
    from localbench.serving.output import OutputSpec
    from localbench.spec import RunSpec
    from localbench.viewdata import SimulationView


class CategoryCheck(Protocol):
    """One category's line in `localbench data check`."""

    scenarios: int
    items: int  # private items
    people: int
    warnings: int
    reference: int  # of them in the benchmark's reference subset (reported when reference_label is set)


class DataCheck(Protocol):
    """What `localbench data check` prints: every file of a source loaded on its own."""

    source: str
    reference_label: str | None  # column title for CategoryCheck.reference, None to leave it out

    @property
    def files(self) -> Sequence[Any]: ...

    @property
    def loaded(self) -> Sequence[Any]: ...

    @property
    def failed(self) -> Sequence[Any]: ...  # each has .error, a message naming file and field

    @property
    def issues(self) -> Sequence[Any]: ...  # warnings of the loaded files

    def per_category(self) -> Mapping[str, CategoryCheck]: ...

    def issues_by_field(self) -> list[tuple[str, int, Any]]: ...  # (field, count, first example)


def delegate(target: str) -> Callable[..., Any]:
    """A method that hands its arguments to ``"module:function"`` (or a class to construct), importing
    the module on the first call: a benchmark's class names where each part lives, and looking the
    benchmark up imports none of its stages."""

    def method(self: Benchmark, *args: Any, **kwargs: Any) -> Any:
        return resolve_name(target)(*args, **kwargs)

    method.__doc__ = f"``{target}``"
    return method


class RunStages(Protocol):
    """The pipeline's stages as a benchmark's own command may use them (given by commands/, so a
    benchmark never imports the pipeline above it)."""

    def log(self, msg: str) -> None: ...

    def has_transcripts(self, run_dir: Path) -> bool: ...

    def judge(self, run_dir: Path, preset: str) -> None: ...

    def score(self, run_dir: Path) -> tuple[float, float]: ...  # wall and CPU seconds

    def report(self, run_dir: Path) -> None: ...  # report and viewer


class Benchmark:
    """A benchmark. Scenarios are the benchmark's own objects, keyed by id."""

    name: ClassVar[str]  # its registered name (spec.benchmark); the entry point's name
    design: ClassVar[Design]  # its axes, roles, metric catalogue, defaults, settings (localbench.design)
    item_judge: ClassVar[ItemJudge | None] = None  # its item-leakage judge, as gold-set evals ask it
    leakage_judges: ClassVar[tuple[str, ...]] = ()  # judge names whose labels the leakage metrics come from
    planted_judge: ClassVar[str] = "planted (truth)"  # the judge name a synthetic run's construction labels go by
    judge_optional: ClassVar[bool] = False  # its scores stand with no judge (`--judge none`): the rule-based part
    generator_takes_model: ClassVar[bool] = False  # `data gen --model`: its generator can write with a model
    rubric_folder: ClassVar[str | None] = None  # its rubrics' folder under judges/ (``rubric_files``' default)
    sampled_judges: ClassVar[tuple[str, ...]] = ()  # judges whose real inputs `judges sample` draws (judge_inputs)

    # -- what every benchmark gives ------------------------------------------------------------------
    def check_source(self, source: str) -> DataCheck:
        """`localbench data check`: every file of ``source`` loaded on its own."""
        raise NotImplementedError

    def load_scenarios(self, source: str, categories: Iterable[str] | str | None = None,
                       limit: int | None = None) -> dict[str, Any]:
        raise NotImplementedError

    def category_of(self, scenario: Any) -> str:
        raise NotImplementedError

    def simulator(self) -> Simulator:
        raise NotImplementedError

    def rubric_files(self) -> list[Path]:
        """Every rubric and rule file its judges use (hashed into spec.yaml): by default the
        templates in judges/<rubric_folder>/."""
        from localbench.judging.rubrics import judges_dir

        if self.rubric_folder is None:
            raise NotImplementedError(f"{self.name}: set rubric_folder or override rubric_files")
        return sorted((judges_dir() / self.rubric_folder).glob("*.j2"))

    def judge_tasks(self, spec: RunSpec, transcripts: list[Transcript], scenarios: Mapping[str, Any],
                    client: StructuredClient, store: RecordStore[Judgment]) -> list[JudgeTask]:
        raise NotImplementedError

    def scenario_scores(self, transcripts: list[Transcript], judgments: list[Judgment], scenarios: Mapping[str, Any],
                        judge: str) -> list[ScenarioScore]:
        """Per-simulation scores under ``judge`` (``spec.NO_JUDGE``: no judge, where ``judge_optional``)."""
        raise NotImplementedError

    def view_simulation(self, transcript: Transcript, judgments: list[Judgment], scenario: Any) -> SimulationView:
        """What the run viewer shows of one simulation under one judge's labels."""
        raise NotImplementedError

    # -- optional capabilities: the defaults say "none" ------------------------------------------
    def preflight_outputs(self, spec: RunSpec, scenarios: Sequence[Any]) -> dict[str, list[OutputSpec]]:
        """role -> the output schemas that role's model is asked for (those of the first scenarios),
        which every engine answers once before the first simulation (``runtime.preflight``); the
        default: none, so no preflight."""
        return {}

    def scripted_backend(self, name: str) -> Any | None:
        """A backend that plays preset ``name`` with no model (a scripted agent: no weights, no
        engine; the simulate stage opens it uncached), or None: every player is a model."""
        return None

    def leak_units(self, scenario: Any, judgments: list[Judgment]) -> dict[Any, str] | None:
        """Per private item, the judge's verdict (for judge-reliability consequences); None where
        the benchmark has no per-item verdicts or a call failed."""
        return None

    def judge_checks(self) -> JudgeChecks:
        """The degenerate answer patterns the score stage looks for in its judges (judging.sanity);
        the default: the generic constant-answer check only."""
        from localbench.judging.sanity import JudgeChecks

        return JudgeChecks()

    def consequence_notes(self, categories: set[str]) -> list[str]:
        """Lines for the judge-reliability consequences of a run over ``categories``."""
        return []

    def report_plan(self) -> ReportPlan:
        """Its report's own tables and figures (report/ renders the shared parts around them)."""
        from localbench.report.plan import ReportPlan

        return ReportPlan()

    def build_gold(self, scenarios: Iterable[Any], seed: int = 0, methods: list[str] | None = None,
                   variants: int = 1) -> list[GoldItem]:
        """`judges gold build`: gold items for judge evaluations."""
        raise UserError(f"{self.name} builds no gold set")

    def judge_inputs(self, transcript: Transcript, scenario: Any, judgments: list[Judgment],
                     spec: RunSpec | None = None) -> Frame:
        """`judges sample`: what each judge call of one simulation showed its judge (rebuilt with the
        benchmark's own call builder, under the run's ``spec``) and the label ``judgments`` (one judge
        model's) gave each unit (a private item, a scored message, a task), in that judge's own labels,
        for the judges in ``sampled_judges``; the default: none."""
        from localbench.judging.sample import Frame

        return Frame([])

    def planted_judgments(self, transcripts: list[Transcript]) -> list[Judgment]:
        """The construction labels of a planted (synthetic) run's transcripts."""
        return []

    def write_planted_run(self, run_dir: Path, source: str, shares: dict[str, float], seed: int = 0) -> Path:
        """`judges plant-run`: a synthetic run whose leaks are known by construction."""
        raise UserError(f"{self.name} has no planted runs; use `judges eval` on gold items")

    def import_command(self, stages: RunStages) -> Callable[..., None] | None:
        """`localbench import <name> PATH ...`: a function whose parameters are typer options, that
        writes someone else's published run as a run directory; None: nothing to import."""
        return None

    def exports(self) -> dict[str, Callable[..., Path]]:
        """`localbench export <name> RUN`: name -> fn(run, scores, out) that writes a finished run (its
        transcripts, scenarios and scenario_scores) in another tool's format into ``out``."""
        return {}

    def cross_checks(self) -> dict[str, Callable[..., Any]]:
        """`localbench report RUN --cross-check <name>`: name -> fn(run, scores, viewer) giving a report
        section (title, Markdown introduction, tables) that sets a second detector beside the run's own."""
        return {}

    def scenario_exports(self) -> dict[str, Callable[..., list[Path]]]:
        """`localbench data export <name> SOURCE --out DIR`: name -> fn(source, out, overwrite=False) that
        writes a scenario source in another tool's input format; the files written."""
        return {}

    def generate_scenarios(self, n: int, seed: int, out: Path, overwrite: bool = False,
                           model: str | None = None) -> list[Path]:
        """`data gen`: ``n`` new scenarios for ``seed``, one file each in ``out``
        (``model`` only where ``generator_takes_model``)."""
        raise UserError(f"benchmark '{self.name}' has no scenario generator")
