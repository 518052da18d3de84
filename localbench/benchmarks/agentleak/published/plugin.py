"""Imported AgentLeak traces as a plug-in (``localbench.benchmarks.Benchmark``), registered as
``agentleak-traces``: its scenarios are the imported run's own traces, it never simulates, and its
scores are the paper's quantities under definitions b to f (``definitions.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from localbench.benchmarks.agentleak.published.design import DESIGN, SETTING
from localbench.benchmarks.contract import Benchmark
from localbench.errors import UserError
from localbench.runtime.harness import Simulator, Unit

NOT_SIMULATED = "an imported run is not simulated: `localbench import agentleak-traces PATH` writes it"


@dataclass
class ImportedTrace:
    """A scenario of an imported run: one trace's inputs (vault, request, allowed and forbidden fields)."""

    id: str
    vertical: str
    payload: dict[str, Any] = field(default_factory=dict)


class ImportedSimulator(Simulator):
    """Refuses to simulate: an imported run's transcripts are the published traces."""

    def check(self, spec) -> None:
        from localbench.spec import SpecError

        raise SpecError(NOT_SIMULATED)

    def load(self, spec):
        return list(load_imported(spec.scenarios).values()), 0

    def plan(self, spec, scenarios):
        return [Unit(s.id, s.vertical, SETTING) for s in scenarios]

    def play(self, unit, clients, spec):
        raise UserError(NOT_SIMULATED)


def load_imported(source: str, categories: Iterable[str] | str | None = None, limit: int | None = None
                  ) -> dict[str, ImportedTrace]:
    from localbench.runlog import RunDir, RunFiles, RunPaths

    run = Path(source)
    if not RunPaths(run).transcripts_path.is_file():
        raise UserError(f"{run}: not an imported run (no {RunFiles.TRANSCRIPTS}); `localbench import agentleak-traces "
                        "PATH` writes one")
    cats = {categories} if isinstance(categories, str) else set(categories or [])
    out: dict[str, ImportedTrace] = {}
    per: dict[str, int] = {}
    for t in RunDir(run).transcripts().read():
        if cats and t.category not in cats:
            continue
        if limit is not None and per.get(t.category, 0) >= limit:
            continue
        per[t.category] = per.get(t.category, 0) + 1
        out[t.scenario] = ImportedTrace(t.scenario, t.category, {k: v for k, v in t.payload.items() if k != "messages"})
    return out


class AgentLeakTraces(Benchmark):
    name = "agentleak-traces"
    design = DESIGN
    leakage_judges = ("rules", "leak")  # leak: AgentLeak's Tier-3 judge, on the sample only
    item_judge = None  # Tier 1-2 rules label these runs; gold-set evaluations of the leak judge run on `agentleak`

    def check_source(self, source: str):
        raise UserError("agentleak-traces reads published traces with `localbench import agentleak-traces PATH`")

    def load_scenarios(self, source: str, categories=None, limit=None) -> dict[str, Any]:
        return load_imported(source, categories, limit)

    def category_of(self, scenario: Any) -> str:
        return scenario.vertical

    def simulator(self):
        return ImportedSimulator()

    def rubric_files(self) -> list[Path]:
        """The rules that label (the detectors and the definitions, hashed like rubrics) and AgentLeak's
        leak-judge rubric, which judges the Tier-3 sample."""
        from localbench.benchmarks.agentleak import detect, identifiers
        from localbench.benchmarks.agentleak.published import definitions
        from localbench.judging.rubrics import judges_dir

        rules = [Path(m.__file__) for m in (detect, identifiers, definitions)]  # type: ignore[arg-type]
        return rules + sorted((judges_dir() / "agentleak").glob("*.j2"))

    def judge_tasks(self, spec, transcripts, scenarios, client, store):
        """Tier 3 on the run's sample only (``tier3.py``); the leak columns stay Tier 1-2."""
        from localbench.benchmarks.agentleak.published.tier3 import build_tasks

        return build_tasks(spec, transcripts, client, store)

    def scenario_scores(self, transcripts, judgments, scenarios, judge: str):
        from localbench.benchmarks.agentleak.published.rescore import scenario_scores

        return scenario_scores(transcripts, judge)

    def build_gold(self, scenarios, seed: int = 0, methods=None, variants: int = 1):
        raise UserError("agentleak-traces builds no gold set: use `agentleak`")

    def judge_checks(self):
        from localbench.judging.sanity import JudgeChecks

        # "no leak" everywhere can be a real Tier-3 result on a sample; AgentLeak's own warnings say it
        return JudgeChecks(constant_exempt=("rules", "leak"), metrics={})

    def view_simulation(self, transcript, judgments, scenario):
        from localbench.benchmarks.agentleak.published.view import view_simulation

        return view_simulation(transcript)

    def report_plan(self):
        from localbench.benchmarks.agentleak.published.report import report_plan

        return report_plan()

    def exports(self):
        """`localbench export agentleak-toolkit RUN`: the channel messages as AgentLeak's toolkit's traces."""
        from localbench.benchmarks.agentleak.toolkit_traces import export_run

        return {"agentleak-toolkit": export_run}

    def cross_checks(self):
        """`localbench report RUN --cross-check agentleak-toolkit`: AgentLeak's toolkit as a second detector."""
        from localbench.benchmarks.agentleak.crosscheck import report_section

        return {"agentleak-toolkit": report_section}

    def import_command(self, stages):
        """`localbench import agentleak-traces PATH`: the AgentLeak harness's published traces."""
        from localbench.benchmarks.agentleak.published.command import import_command

        return import_command(stages)
