"""SopriBench as a plug-in (``localbench.benchmarks.Benchmark``): thin adapters only."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from localbench.benchmarks.contract import Benchmark
from localbench.benchmarks.sopri.design import DESIGN


class SopriBench(Benchmark):
    name = "sopri"
    design = DESIGN
    leakage_judges = ("granularity",)
    rubric_folder = "sopri"
    generator_takes_model = True

    @property
    def item_judge(self):
        from localbench.benchmarks.sopri.judges import SlotItemJudge

        return SlotItemJudge()

    def check_source(self, source: str):
        from localbench.benchmarks.sopri.check import check_source

        return check_source(source)

    def load_scenarios(self, source: str, categories: Iterable[str] | str | None = None,
                       limit: int | None = None) -> dict[str, Any]:
        from localbench.benchmarks.sopri.loaders import load_users

        return {u.id: u for u in load_users(source, categories, limit).users}

    def category_of(self, scenario: Any) -> str:
        return scenario.cohort

    def simulator(self):
        from localbench.benchmarks.sopri.simulate import SopriSimulator

        return SopriSimulator()

    def judge_tasks(self, spec, transcripts, scenarios, client, store):
        from localbench.benchmarks.sopri.evaluate import build_tasks

        return build_tasks(spec, transcripts, dict(scenarios), client, store)

    def scenario_scores(self, transcripts, judgments, scenarios: Mapping[str, Any], judge: str):
        from localbench.benchmarks.sopri.scoring import scenario_scores

        return scenario_scores(transcripts, judgments, dict(scenarios), judge)

    def leak_units(self, scenario, judgments):
        """Each leaked attribute's grade (none / partial / full), or None where a call failed or is missing."""
        from localbench.benchmarks.sopri.scoring import leak_units

        return leak_units(scenario, judgments)

    def build_gold(self, scenarios: Iterable[Any], seed: int = 0, methods: list[str] | None = None, variants: int = 1):
        from localbench.benchmarks.sopri.gold_pairs import build_gold

        return build_gold(list(scenarios), seed=seed, methods=methods, variants=variants)

    def generate_scenarios(self, n: int, seed: int, out: Path, overwrite: bool = False,
                           model: str | None = None) -> list[Path]:
        """`localbench data gen sopri`: new users (profile → leakage plan → posts → rendered images)."""
        from localbench.benchmarks.sopri.generate import generate_users

        return generate_users(n, seed, out, overwrite=overwrite, model=model)

    def judge_checks(self):
        from localbench.judging.sanity import JudgeChecks

        # every answer "wrong" can be a real result (an attacker that guessed nothing right)
        return JudgeChecks(constant_exempt=("granularity",), metrics={"granularity": ("PES", "ACC", "GRAN")})

    def view_simulation(self, transcript, judgments, scenario):
        from localbench.benchmarks.sopri.view import view_simulation

        return view_simulation(transcript, judgments, scenario)

    def report_plan(self):
        from localbench.benchmarks.sopri.report import report_plan

        return report_plan()
