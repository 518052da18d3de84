"""Benchmarks are plug-ins: each registers its scenario loader, simulator, judges and metrics.

The pipeline, `judges rejudge` and the judge-reliability consequences reach a benchmark only
through the ``Benchmark`` protocol, looked up by the name a run's spec records
(``get_benchmark(spec.benchmark)``). Layers below (judging/, runtime/, serving/) never import a
benchmark; they are handed what they need (an ``ItemJudge``, a list of ``JudgeTask``s).
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Protocol, Sequence, runtime_checkable

if TYPE_CHECKING:
    from localbench.judging.calls import ItemJudge
    from localbench.judging.gold import GoldItem
    from localbench.judging.runner import JudgeTask
    from localbench.runtime.records import JsonlStore
    from localbench.runtime.summary import SimulationSummary
    from localbench.scores import Scores
    from localbench.serving.client import StructuredClient
    from localbench.spec import RunSpec

Record = dict[str, Any]


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
    item_judge: ItemJudge  # its item-leakage judge, as gold-set evals ask it
    leakage_judges: tuple[str, ...]  # judge names whose labels the leakage metrics come from
    headline: Mapping[str, str]  # category -> the leakage metric a category's models are ranked by
    planted_judge: str  # the judge name a synthetic run's construction labels go by
    categories: tuple[str, ...]  # its categories in run order (`--max-rounds N` sets each)

    def check_source(self, source: str) -> DataCheck: ...

    def load_scenarios(self, source: str, categories: Iterable[str] | str | None = None,
                       limit: int | None = None) -> dict[str, Any]: ...

    def category_of(self, scenario: Any) -> str: ...

    def simulate(self, spec: RunSpec, progress: bool | None = None) -> SimulationSummary: ...

    def rubric_files(self) -> list[Path]: ...

    def judge_tasks(self, spec: RunSpec, transcripts: list[Record], scenarios: Mapping[str, Any],
                    client: StructuredClient, store: JsonlStore) -> list[JudgeTask]: ...

    def scenario_scores(self, transcripts: list[Record], judgments: list[Record], scenarios: Mapping[str, Any],
                        judge: str) -> list[Record]: ...

    def aggregate(self, records: list[Record], run_id: str, judge: str, seed: int = 0) -> Scores: ...

    def write_scores(self, run_dir: Path, records: list[Record], scores: Scores) -> None: ...

    def is_leakage_metric(self, name: str) -> bool: ...

    def leak_units(self, scenario: Any, judgments: list[Record]) -> dict[Any, str] | None: ...

    def planted_judgments(self, transcripts: list[Record]) -> list[Record]: ...

    def build_gold(self, scenarios: Iterable[Any], seed: int = 0, methods: list[str] | None = None,
                   variants: int = 1) -> list[GoldItem]: ...

    def write_planted_run(self, run_dir: Path, source: str, shares: dict[str, float], seed: int = 0) -> Path: ...

    def consequence_notes(self, categories: set[str]) -> list[str]: ...


# name -> "module:attribute" of a zero-argument factory; imported on first use so that
# `localbench --help` and runs of one benchmark never import another.
REGISTRY: dict[str, str] = {
    "asb": "localbench.benchmarks.asb.plugin:AgentSocialBench",
}


def get_benchmark(name: str) -> Benchmark:
    """The registered benchmark called ``name``."""
    from localbench.errors import UserError

    target = REGISTRY.get(name)
    if target is None:
        raise UserError(f"unknown benchmark '{name}' (registered: {', '.join(sorted(REGISTRY))})")
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)()
