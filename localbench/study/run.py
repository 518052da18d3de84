"""``localbench study run``: a study's runs on this machine, one engine at a time.

Per benchmark: each model's simulations in turn (its engines opened, used, closed and their memory
returned before the next model's load), then the benchmark's judge loaded **once** and every
model's transcripts judged with it (each run through its own response cache), then each run
scored and reported. Where the judge is one of the models (its preset, on the same engine), that
model runs last and its engine judges: the earlier models' transcripts while it simulates, and its
own as each simulation ends (``pipeline.JudgeAlong``), so the judge is never opened on its own.
Each run is planned once (``runtime.plan``) and carries its plan (``PlannedRun.plan``). Every stage is the run's own (``localbench.pipeline``), so a study killed half
way and started again resumes each run where it stopped, and a run already reported is skipped
without loading anything.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
    shared_judge: list[str] = field(default_factory=list)  # benchmarks judged on the last model's engine


def finished(run: PlannedRun) -> bool:
    """A run whose report is written after its scores: nothing of it is left to do."""
    from localbench.runlog import RunPaths

    paths = RunPaths(run.run_dir)
    return (paths.report_md.exists() and paths.scores_path.exists()
            and paths.report_md.stat().st_mtime >= paths.scores_path.stat().st_mtime)


def simulate_run(run: PlannedRun, progress: bool | None, judged_along: list[PlannedRun] | None = None) -> PlannedRun:
    """One model's simulations, its engines closed at the end (``pipeline.simulate_stage``); returns
    the run with its plan. ``judged_along``: the judge shares this model's engine (the study's last
    model), which judges these runs while it simulates, and this run as each simulation ends."""
    from localbench.pipeline import JudgeAlong, Resolved, plan_stages, simulate_stage

    res = Resolved(run.spec)
    if judged_along is None:
        plan = plan_stages(run.spec, res, roles=run.spec.design.simulation_roles, staged=True)
        simulate_stage(run.spec, progress, res=res)
    else:
        plan = plan_stages(run.spec, res)
        simulate_stage(run.spec, progress, along=EarlierRunsAlong(JudgeAlong(run.spec, progress, res), judged_along,
                                                                  progress), res=res)
    return dataclasses.replace(run, plan=plan)


class EarlierRunsAlong:
    """The last model's pipelined judge (``pipeline.JudgeAlong``) that also judges the benchmark's
    earlier runs on the same engine, from the moment it opens, beside this run's simulations."""

    def __init__(self, along: Any, earlier: list[PlannedRun], progress: bool | None):
        self.along, self.earlier, self.progress = along, earlier, progress
        self._task: asyncio.Future | None = None

    @property
    def summary_line(self) -> str:
        return self.along.summary_line

    def start(self, clients) -> None:
        from localbench.pipeline import judge_with

        self.along.start(clients)
        backend = clients.for_role(self.along.spec.design.primary_role).backend

        async def judge_earlier() -> None:
            for run in self.earlier:
                await judge_with(run.spec, backend, self.progress)

        self._task = asyncio.ensure_future(judge_earlier())

    def add(self, transcript) -> None:
        self.along.add(transcript)

    async def finish(self) -> None:
        try:
            if self._task is not None:
                await self._task
        finally:
            await self.along.finish()


def judge_shares_engine(runs: list[PlannedRun]) -> PlannedRun | None:
    """The run whose model's engine can judge every run of ``runs`` (their one judge is its preset,
    on the same server: ``pipeline.shares_engine``), if any."""
    from localbench.pipeline import shares_engine

    judges = {r.judge for r in runs if r.spec.judged}
    if len(judges) != 1:
        return None
    return next((r for r in runs if r.model in judges and shares_engine(r.spec)), None)


async def judge_runs(runs: list[PlannedRun], progress: bool | None, times: StudyTimes) -> None:
    """Every run of one benchmark judged by one judge engine, opened once (on the plan's entry for
    the judge: ``runtime.plan``), in this event loop."""
    from localbench.pipeline import judge_with
    from localbench.runtime.plan import plan_run
    from localbench.serving.session import open_client

    first = runs[0].spec
    role = first.design.judge_role
    t0 = time.monotonic()
    client = open_client(plan_run(first, [role]).entry(role), first.serving, role=role)
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
        judged = [r for r in todo if r.spec.judged]
        last = judge_shares_engine(judged)
        if last is not None:  # it simulates last, and its engine judges every run
            todo = [r for r in todo if r is not last] + [last]
        for run in todo:
            along = [r for r in judged if r is not last] if run is last else None
            say(f"{benchmark} × {run.model}: simulating ({run.run_dir})"
                + (f", judging {len(judged)} run(s) on its engine as it goes" if along is not None else ""))
            t0 = time.monotonic()
            planned = simulate_run(run, progress, along)
            runs[runs.index(run)] = planned
            times.simulate_s[run.spec.resolved_run_id] = time.monotonic() - t0
            if along is not None:
                times.judge_loads += 1  # the judge's one load: this model's engine
                times.judge_load_s[benchmark] = 0.0
                times.judge_s[benchmark] = times.simulate_s[run.spec.resolved_run_id]
                times.shared_judge.append(benchmark)
        if judged and last is None:
            say(f"{benchmark}: judging {len(judged)} run(s) with {judged[0].judge}, loaded once")
            asyncio.run(judge_runs(judged, progress, times))
        for run in todo:
            t0 = time.monotonic()
            score_stage(run.spec)
            report_stage(run.spec)
            times.score_report_s[run.spec.resolved_run_id] = time.monotonic() - t0
    return runs, times
