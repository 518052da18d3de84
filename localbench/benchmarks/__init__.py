"""Benchmarks are plug-ins: each registers its scenario loader, simulator, judges and metrics.

The pipeline, `judges rejudge` and the judge-reliability consequences reach a benchmark only
through the ``Benchmark`` protocol, looked up by the name a run's spec records
(``get_benchmark(spec.benchmark)``), and what every shared layer needs to know about it (axes,
roles, metric catalogue, defaults, report) through its ``design`` (``localbench.design``). Layers
below (judging/, runtime/, serving/) never import a benchmark; they are handed what they need (an
``ItemJudge``, a list of ``JudgeTask``s, a ``Simulator``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Protocol, Sequence, runtime_checkable

from localbench.design import Design, UnknownBenchmark, plugin_class

if TYPE_CHECKING:
    from localbench.judging.calls import ItemJudge
    from localbench.judging.gold import GoldItem
    from localbench.judging.runner import JudgeTask
    from localbench.judging.sanity import JudgeChecks
    from localbench.runlog import Judgment, RecordStore, ScenarioScore, Transcript
    from localbench.runtime.harness import Simulator
    from localbench.serving.client import StructuredClient
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


@runtime_checkable
class Benchmark(Protocol):
    """What a benchmark gives the pipeline. Scenarios are the benchmark's own objects, keyed by id."""

    name: str
    design: Design  # its axes, roles, metric catalogue, defaults and report (localbench.design)
    item_judge: ItemJudge  # its item-leakage judge, as gold-set evals ask it
    leakage_judges: tuple[str, ...]  # judge names whose labels the leakage metrics come from
    planted_judge: str  # the judge name a synthetic run's construction labels go by
    judge_optional: bool  # its scores stand with no judge (`--judge none`, ``spec.NO_JUDGE``): the rule-based part

    def check_source(self, source: str) -> DataCheck: ...

    def scripted_backend(self, name: str) -> Any | None:
        """A backend that plays preset ``name`` with no model (a scripted agent: no weights, no
        engine; the simulate stage opens it uncached), or None for a real preset."""
        ...

    def load_scenarios(self, source: str, categories: Iterable[str] | str | None = None,
                       limit: int | None = None) -> dict[str, Any]: ...

    def category_of(self, scenario: Any) -> str: ...

    def simulator(self) -> Simulator: ...

    def rubric_files(self) -> list[Path]: ...

    def judge_tasks(self, spec: RunSpec, transcripts: list[Transcript], scenarios: Mapping[str, Any],
                    client: StructuredClient, store: RecordStore[Judgment]) -> list[JudgeTask]: ...

    def scenario_scores(self, transcripts: list[Transcript], judgments: list[Judgment], scenarios: Mapping[str, Any],
                        judge: str) -> list[ScenarioScore]:
        """Per-simulation scores under ``judge`` (``spec.NO_JUDGE``: no judge, where ``judge_optional``)."""
        ...

    def leak_units(self, scenario: Any, judgments: list[Judgment]) -> dict[Any, str] | None: ...

    def planted_judgments(self, transcripts: list[Transcript]) -> list[Judgment]: ...

    def build_gold(self, scenarios: Iterable[Any], seed: int = 0, methods: list[str] | None = None,
                   variants: int = 1) -> list[GoldItem]: ...

    def write_planted_run(self, run_dir: Path, source: str, shares: dict[str, float], seed: int = 0) -> Path: ...

    def consequence_notes(self, categories: set[str]) -> list[str]: ...

    def judge_checks(self) -> JudgeChecks:
        """The degenerate answer patterns the score stage looks for in its judges (judging.sanity)."""
        ...

    def view_simulation(self, transcript: Transcript, judgments: list[Judgment], scenario: Any) -> SimulationView:
        """What the run viewer shows of one simulation under one judge's labels."""
        ...


def get_benchmark(name: str) -> Benchmark:
    """The registered benchmark called ``name`` (``localbench.design.registered``)."""
    from localbench.errors import UserError

    try:
        return plugin_class(name)()
    except UnknownBenchmark as e:
        raise UserError(str(e)) from e
