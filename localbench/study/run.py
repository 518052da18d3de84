"""``localbench study run``: a study's runs on this machine, one engine at a time.

Per benchmark: each model's simulations in turn (its engines opened, used, closed and their memory
returned before the next model's load), then the benchmark's judge loaded **once** and every
model's transcripts judged with it (each run through its own response cache), then each run
scored and reported. Every stage is the run's own (``localbench.pipeline``), so a study killed half
way and started again resumes each run where it stopped, and a run already reported is skipped
without loading anything.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from localbench.study.plan import PlannedRun, plan_runs
from localbench.study.spec import Study


@dataclass
class StudyTimes:
    """Where a study's time went (bench/study_overhead.py reads these): per run its simulate stage
    (engine start and stop included) and per benchmark the judge engine's load and its judging."""

    simulate_s: dict[str, float] = field(default_factory=dict)  # run id -> seconds
    judge_load_s: dict[str, float] = field(default_factory=dict)  # benchmark -> seconds to open the judge
    judge_s: dict[str, float] = field(default_factory=dict)  # benchmark -> seconds judging, load included
    score_report_s: dict[str, float] = field(default_factory=dict)  # run id -> seconds
    judge_loads: int = 0  # judge engines opened (one per benchmark with something to judge)


def finished(run: PlannedRun) -> bool:
    """A run whose report is written after its scores: nothing of it is left to do."""
    from localbench.runlog import RunPaths

    paths = RunPaths(run.run_dir)
    return (paths.report_md.exists() and paths.scores_path.exists()
            and paths.report_md.stat().st_mtime >= paths.scores_path.stat().st_mtime)


def simulate_run(run: PlannedRun, progress: bool | None) -> None:
    """One model's simulations, its engines closed at the end (``pipeline.simulate_stage``)."""
    from localbench.pipeline import Resolved, check_judging, simulate_stage
    from localbench.runtime.clients import check_models

    res = Resolved(run.spec)
    check_judging(run.spec)
    res.engines.update(check_models(run.spec, run.spec.design.simulation_roles))
    simulate_stage(run.spec, progress, res=res)


async def judge_runs(runs: list[PlannedRun], progress: bool | None, times: StudyTimes) -> None:
    """Every run of one benchmark judged by one judge engine, opened once, in this event loop."""
    from localbench.pipeline import judge_with
    from localbench.runtime.clients import check_models
    from localbench.serving.session import open_client

    first = runs[0].spec
    role = first.design.judge_role
    t0 = time.monotonic()
    plan = check_models(first, [role])[(role, first.judge_model)]
    client = open_client(first.judge_model, first.serving, first.url_for(role), None, role=role,
                         engine=plan.engine, gpu_memory_utilization=plan.gpu_memory_utilization)
    times.judge_loads += 1
    times.judge_load_s[first.benchmark] = time.monotonic() - t0
    try:
        for run in runs:
            await judge_with(run.spec, client.backend, progress)
    finally:
        await client.aclose()
    times.judge_s[first.benchmark] = time.monotonic() - t0


def run_study(study: Study, progress: bool | None = None,
              log: Callable[[str], None] | None = None) -> tuple[list[PlannedRun], StudyTimes]:
    """Every run of the study not yet reported; returns the runs and where the time went."""
    from localbench.pipeline import report_stage, score_stage

    say = log or (lambda line: None)
    runs = plan_runs(study)
    times = StudyTimes()
    for benchmark in study.benchmarks:
        todo = [r for r in runs if r.benchmark == benchmark and not finished(r)]
        if not todo:
            say(f"{benchmark}: every run already reported")
            continue
        for run in todo:
            say(f"{benchmark} × {run.model}: simulating ({run.run_dir})")
            t0 = time.monotonic()
            simulate_run(run, progress)
            times.simulate_s[run.spec.resolved_run_id] = time.monotonic() - t0
        judged = [r for r in todo if r.spec.judged]
        if judged:
            say(f"{benchmark}: judging {len(judged)} run(s) with {judged[0].judge}, loaded once")
            asyncio.run(judge_runs(judged, progress, times))
        for run in todo:
            t0 = time.monotonic()
            score_stage(run.spec)
            report_stage(run.spec)
            times.score_report_s[run.spec.resolved_run_id] = time.monotonic() - t0
    return runs, times
