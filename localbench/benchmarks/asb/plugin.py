"""AgentSocialBench's ``Benchmark``: where each part lives; the logic is in the modules it names."""

from __future__ import annotations

from typing import Any, Iterable

from localbench.benchmarks.asb.design import DESIGN
from localbench.benchmarks.asb.judges import ItemLeakJudge
from localbench.benchmarks.asb.planting import PLANTABLE, PLANTED
from localbench.benchmarks.contract import Benchmark, delegate

HERE = "localbench.benchmarks.asb"


class AgentSocialBench(Benchmark):
    name = "asb"
    design = DESIGN
    item_judge = ItemLeakJudge()
    leakage_judges = ("privacy", "privacy_pairs")
    planted_judge = PLANTED
    rubric_folder = "asb"
    sampled_judges = ("privacy", "privacy_pairs", "abstraction", "task")  # `judges sample` (judge_inputs.py)

    check_source = delegate(f"{HERE}.check:check_source")
    simulator = delegate(f"{HERE}.simulate:AsbSimulator")
    judge_tasks = delegate(f"{HERE}.judge_stage:build_tasks")
    scenario_scores = delegate(f"{HERE}.scoring:scenario_scores")
    view_simulation = delegate(f"{HERE}.view:view_simulation")
    leak_units = delegate(f"{HERE}.metrics:leak_units")
    judge_checks = delegate(f"{HERE}.judges:judge_checks")
    report_plan = delegate(f"{HERE}.report:report_plan")
    build_gold = delegate(f"{HERE}.gold_pairs:build_gold")
    planted_judgments = delegate(f"{HERE}.planting:planted_judgments")
    write_planted_run = delegate(f"{HERE}.planting:write_planted_run")
    judge_inputs = delegate(f"{HERE}.judge_inputs:judge_inputs")
    preflight_outputs = delegate(f"{HERE}.preflight:preflight_outputs")

    def load_scenarios(self, source: str, categories: Iterable[str] | str | None = None,
                       limit: int | None = None) -> dict[str, Any]:
        from localbench.benchmarks.asb.loaders import load_scenarios

        return {s.id: s for s in load_scenarios(source, categories, limit).scenarios}

    def category_of(self, scenario: Any) -> str:
        return scenario.category

    def consequence_notes(self, categories: set[str]) -> list[str]:
        if categories - set(PLANTABLE):
            return ["multi-party categories use the pair rubric (privacy_pairs.j2); these corrections borrow the "
                    "item rubric's FPR/FNR and are indicative only. The pair rubric has gold of its own "
                    "(`judges gold build --judge privacy_pairs`): the run report's trust section corrects "
                    "MPLR, HALR and CSLR with the pair rubric's measured FPR/FNR"]
        return []
