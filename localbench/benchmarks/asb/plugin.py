"""AgentSocialBench as a plug-in (``localbench.benchmarks.Benchmark``): thin adapters only.

Each method hands over to the module that owns the logic; imports happen inside them, so looking
the benchmark up costs nothing until a stage runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from localbench.benchmarks.asb.design import DESIGN
from localbench.benchmarks.contract import Benchmark
from localbench.benchmarks.asb.judges import ItemLeakJudge
from localbench.benchmarks.asb.planting import PLANTABLE, PLANTED


class AgentSocialBench(Benchmark):
    name = "asb"
    design = DESIGN
    item_judge = ItemLeakJudge()
    leakage_judges = ("privacy", "privacy_pairs")
    planted_judge = PLANTED
    rubric_folder = "asb"

    def check_source(self, source: str):
        from localbench.benchmarks.asb.check import check_source

        return check_source(source)

    def load_scenarios(self, source: str, categories: Iterable[str] | str | None = None,
                       limit: int | None = None) -> dict[str, Any]:
        from localbench.benchmarks.asb.loaders import load_scenarios

        return {s.id: s for s in load_scenarios(source, categories, limit).scenarios}

    def category_of(self, scenario: Any) -> str:
        return scenario.category

    def simulator(self):
        from localbench.benchmarks.asb.simulate import AsbSimulator

        return AsbSimulator()

    def judge_tasks(self, spec, transcripts, scenarios, client, store):
        from localbench.benchmarks.asb.evaluate import build_tasks

        return build_tasks(spec, transcripts, dict(scenarios), client, store)

    def scenario_scores(self, transcripts, judgments, scenarios: Mapping[str, Any], judge: str):
        from localbench.benchmarks.asb.scoring import scenario_scores

        return scenario_scores(transcripts, judgments, dict(scenarios), judge)

    def leak_units(self, scenario, judgments):
        from localbench.benchmarks.asb.metrics import leak_units

        return leak_units(scenario, judgments)

    def planted_judgments(self, transcripts):
        from localbench.benchmarks.asb.planting import planted_judgments

        return planted_judgments(transcripts)

    def build_gold(self, scenarios: Iterable[Any], seed: int = 0, methods: list[str] | None = None,
                   variants: int = 1):
        from localbench.benchmarks.asb.gold_pairs import build_gold

        return build_gold(list(scenarios), seed=seed, methods=methods, variants=variants)

    def write_planted_run(self, run_dir: Path, source: str, shares: dict[str, float], seed: int = 0) -> Path:
        from localbench.benchmarks.asb.planting import write_planted_run

        return write_planted_run(run_dir, source, shares, seed=seed)

    def view_simulation(self, transcript, judgments, scenario):
        from localbench.benchmarks.asb.view import view_simulation

        return view_simulation(transcript, judgments, scenario)

    def judge_checks(self):
        from localbench.benchmarks.asb.judges import judge_checks

        return judge_checks()

    def report_plan(self):
        from localbench.benchmarks.asb.report import report_plan

        return report_plan()

    def consequence_notes(self, categories: set[str]) -> list[str]:
        if categories - set(PLANTABLE):
            return ["multi-party categories use the pair rubric (privacy_pairs.j2), which the gold set does not "
                    "measure; their corrections borrow the item rubric's FPR/FNR and are indicative only"]
        return []
