"""Self-judging flagged (issue 45 item 4): a run whose judge is the model of its primary role (the
default) says so in the score stage's judge warnings, and the report marks every number that judge
made; no judge, a rule judge, a synthetic judge or another model is not self-judging.

tests/golden/asb-v1-run is the recorded embedded default: SmolLM2-135M plays the agent and, by
default, the judge."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from localbench.cli import app
from localbench.judging.sanity import self_judging, self_judging_message
from localbench.registry import get_benchmark
from localbench.report.tables import FLAG
from localbench.scores import SELF_JUDGING
from localbench.spec import NO_JUDGE, RunSpec

RECORDED = Path(__file__).resolve().parent / "golden" / "asb-v1-run"


def _cli(*args: str) -> None:
    res = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.output


def test_the_recorded_default_run_is_flagged_and_every_number_its_judge_made_is_marked(tmp_path):
    run = tmp_path / "asb-d9c285b0e4"
    shutil.copytree(RECORDED, run)
    _cli("score", str(run))
    warns = json.loads((run / "scores.json").read_text())["judge_warnings"]
    [own] = [w for w in warns if w["pattern"] == SELF_JUDGING]
    design = get_benchmark("asb").design
    assert own["judge_model"] == "smollm2-135m" and own["judge"] == design.judge_role
    assert own["count"] == own["total"] == len((run / "transcripts.jsonl").read_text().splitlines())
    judged = {m for ms in get_benchmark("asb").judge_checks().metrics.values() for m in ms}
    assert {m.name for m in design.metrics if m.leakage} | judged <= set(own["metrics"])
    _cli("report", str(run))
    md = (run / "report.md").read_text()
    warnings = md.split("**Judge warnings**", 1)[1].split("\n\n", 2)[1]
    assert f"- {own['message']}" in warnings and "self-judging: the judge (smollm2-135m)" in warnings
    lead = md.split("**Headline metrics by model and privacy level**", 1)[1].split("\n\n", 2)[1]
    leakage_cells = [line for line in lead.splitlines() if line.startswith("| smollm2-135m")]
    assert leakage_cells and all(FLAG in line for line in leakage_cells)
    assert "the model under test as its own judge (smollm2-135m; see Judge warnings)" in md
    assert "a judge whose answers looked degenerate (" in md  # the degenerate judges are still named as such


def _spec(benchmark: str, agent: str, judge_model: str | None = None, **extra: str) -> RunSpec:
    design = get_benchmark(benchmark).design
    models = {design.primary_role: agent} | ({design.judge_role: judge_model} if judge_model is not None else {})
    return RunSpec(benchmark=benchmark, models=models, extra=extra)


def test_only_the_agents_own_model_as_judge_is_self_judging():
    scripted = get_benchmark("agentleak").scripted_backend
    assert self_judging(_spec("asb", "qwen3-8b"))  # the default: the judge role defaults to the agent's
    assert self_judging(_spec("asb", "qwen3-8b", "qwen3-8b"))
    assert "is also the agent's model" in self_judging_message(_spec("asb", "qwen3-8b"))
    assert "is also the attacker's model" in self_judging_message(_spec("sopri", "qwen3-8b"))
    for spec, scripts in ((_spec("asb", "qwen3-8b", "llama-3.1-8b-instruct"), None),  # another model
                          (_spec("asb", "qwen3-8b", NO_JUDGE), None),  # no judge
                          (_spec("asb", "qwen3-8b", "oracle"), None),  # a synthetic judge
                          (_spec("sopri", "qwen3-8b", judge="exact"), None),  # a rule judge: no model judges
                          (_spec("agentleak", "oracle-leaks-C2"), scripted)):  # a scripted player, no model
        assert not self_judging(spec, scripted=scripts), spec.models
        assert self_judging_message(spec, scripted=scripts) is None
