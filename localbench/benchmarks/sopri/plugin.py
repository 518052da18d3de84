"""SopriBench's ``Benchmark``: where each part lives; the logic is in the modules it names."""

from __future__ import annotations

from typing import Any, Iterable

from localbench.benchmarks.contract import Benchmark, delegate
from localbench.benchmarks.sopri.design import DESIGN

HERE = "localbench.benchmarks.sopri"


class SopriBench(Benchmark):
    name = "sopri"
    design = DESIGN
    leakage_judges = ("granularity",)
    rubric_folder = "sopri"
    generator_takes_model = True
    sampled_judges = ("granularity",)  # `judges sample` (judge_inputs.py)

    @property
    def item_judge(self):
        from localbench.benchmarks.sopri.judges import SlotItemJudge

        return SlotItemJudge()

    check_source = delegate(f"{HERE}.check:check_source")
    simulator = delegate(f"{HERE}.simulate:SopriSimulator")
    judge_tasks = delegate(f"{HERE}.judge_stage:build_tasks")
    scenario_scores = delegate(f"{HERE}.scoring:scenario_scores")
    view_simulation = delegate(f"{HERE}.view:view_simulation")
    leak_units = delegate(f"{HERE}.scoring:leak_units")  # each leaked attribute's grade; None where a call failed
    report_plan = delegate(f"{HERE}.report:report_plan")
    build_gold = delegate(f"{HERE}.gold_pairs:build_gold")
    preflight_outputs = delegate(f"{HERE}.preflight:preflight_outputs")
    judge_inputs = delegate(f"{HERE}.judge_inputs:judge_inputs")
    def generate_scenarios(self, n: int, seed: int, out, overwrite: bool = False, model: str | None = None):
        """profile → leakage plan → posts → images (``generate``), labelled under the default taxonomy
        (``python -m localbench.benchmarks.sopri.generate --taxonomy localbench`` for localbench's)."""
        from localbench.benchmarks.sopri.generate import generate_users
        from localbench.benchmarks.sopri.taxonomy import DEFAULT_TAXONOMY

        return generate_users(n, seed, out, overwrite=overwrite, model=model, taxonomy_name=DEFAULT_TAXONOMY)

    def scenario_exports(self):
        from localbench.benchmarks.sopri.argus_export import export_source

        return {"argus": export_source}  # the released code's input format, argus-user-json-v1

    def load_scenarios(self, source: str, categories: Iterable[str] | str | None = None,
                       limit: int | None = None) -> dict[str, Any]:
        from localbench.benchmarks.sopri.loaders import load_users
        from localbench.benchmarks.sopri.taxonomy import builtin_source

        # ``builtin``: the default taxonomy's suite (a run picks its own in ``simulate.load``)
        return {u.id: u for u in load_users(builtin_source(source), categories, limit).users}

    def category_of(self, scenario: Any) -> str:
        return scenario.cohort

    def judge_checks(self):
        from localbench.judging.sanity import JudgeChecks

        # every answer "wrong" can be a real result (an attacker that guessed nothing right)
        return JudgeChecks(constant_exempt=("granularity",), metrics={"granularity": ("PES", "PES:depth", "ACC", "GRAN")})
