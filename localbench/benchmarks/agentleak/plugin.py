"""AgentLeak's ``Benchmark``: where each part lives; the logic is in the modules it names."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping

from localbench.benchmarks.agentleak.design import DESIGN
from localbench.benchmarks.contract import Benchmark, delegate

HERE = "localbench.benchmarks.agentleak"


class AgentLeak(Benchmark):
    name = "agentleak"
    design = DESIGN
    leakage_judges = ("leak",)
    rubric_folder = "agentleak"
    sampled_judges = ("leak", "task")  # `judges sample` (judge_inputs.py)
    judge_optional = True  # tiers 1-2 need no model: `--judge none` scores with them alone (tier 3 off)

    check_source = delegate(f"{HERE}.check:check_source")
    simulator = delegate(f"{HERE}.simulate:AgentLeakSimulator")
    judge_tasks = delegate(f"{HERE}.judge_stage:build_tasks")
    view_simulation = delegate(f"{HERE}.view:view_simulation")
    report_plan = delegate(f"{HERE}.report:report_plan")
    build_gold = delegate(f"{HERE}.gold_pairs:build_gold")
    preflight_outputs = delegate(f"{HERE}.preflight:preflight_outputs")
    judge_inputs = delegate(f"{HERE}.judge_inputs:judge_inputs")

    def scripted_backend(self, name: str):
        """``oracle`` and ``oracle-leaks-C<k>``: the scripted agents of ``oracle.py``."""
        from localbench.benchmarks.agentleak.oracle import OracleBackend, is_oracle

        return OracleBackend(name) if is_oracle(name) else None

    @property
    def item_judge(self):
        from localbench.benchmarks.agentleak.judges import VaultItemJudge

        return VaultItemJudge()

    def exports(self):
        """`localbench export agentleak-toolkit RUN`: the channel messages as AgentLeak's toolkit's traces."""
        from localbench.benchmarks.agentleak.toolkit_traces import export_run

        return {"agentleak-toolkit": export_run}

    def cross_checks(self):
        """`localbench report RUN --cross-check agentleak-toolkit`: AgentLeak's toolkit as a second detector."""
        from localbench.benchmarks.agentleak.crosscheck import report_section

        return {"agentleak-toolkit": report_section}

    def load_scenarios(self, source: str, categories: Iterable[str] | str | None = None,
                       limit: int | None = None) -> dict[str, Any]:
        from localbench.benchmarks.agentleak.loaders import load_scenarios

        return {s.id: s for s in load_scenarios(source, categories, limit).scenarios}

    def category_of(self, scenario: Any) -> str:
        return scenario.vertical

    def scenario_scores(self, transcripts, judgments, scenarios: Mapping[str, Any], judge: str):
        from localbench.benchmarks.agentleak.scoring import scenario_scores

        from localbench.spec import NO_JUDGE

        return scenario_scores(transcripts, judgments, dict(scenarios), judge, tier3=judge != NO_JUDGE)

    def leak_units(self, scenario, judgments):
        """The judge's (field, channel) verdicts, or None where a call failed or is missing."""
        from localbench.benchmarks.agentleak.scoring import judged_channels, leak_units

        _, failed, missing = judged_channels(judgments)
        if failed or missing:
            return None
        return leak_units(judgments)

    def generate_scenarios(self, n: int, seed: int, out: Path, overwrite: bool = False,
                           model: str | None = None) -> list[Path]:
        """`localbench data gen agentleak`: new scenarios with Faker and python-stdnum, one YAML each."""
        from localbench.benchmarks.agentleak.generate import generate, write_scenarios

        return write_scenarios(generate(n, seed), out, overwrite=overwrite)

    def judge_checks(self):
        from localbench.benchmarks.agentleak.design import CHANNEL_METRICS
        from localbench.judging.sanity import JudgeChecks

        # "no leak" on every channel of every trace can be a real result (a careful system): not flagged
        return JudgeChecks(constant_exempt=("leak",), metrics={
            "leak": ("ELR", "ELR:all", "WLS", "H1", "H1:internal", "ASR", *CHANNEL_METRICS),
            "task": ("TSR:semantic",)})  # the task judge: "met" everywhere is said (a warning), not hidden
