"""``localbench study status`` and ``study plan``: what a study's cells hold, and what they will take.

A cell is one (benchmark, model) run: its simulations done of those planned, whether it is judged,
scored and reported. The plan adds each run's simulations and, where bench/ holds a measurement
of this kind of run on this kind of machine (bench/study_estimates.json, from bench/cpu_runs.md),
a rough time.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from localbench.study.plan import PlannedRun

ESTIMATES = Path(__file__).resolve().parents[2] / "bench" / "study_estimates.json"


@dataclass(frozen=True)
class Cell:
    run: PlannedRun
    planned: int  # simulations the run's spec lists
    done: int  # of them with a transcript
    judged: int  # judgments written
    scored: bool
    reported: bool

    @property
    def state(self) -> str:
        if self.reported and self.done == self.planned:
            return "done"
        if self.done == 0:
            return "not started"
        return f"{self.done}/{self.planned} simulated" + (", judged" if self.judged else "") + (", scored" if self.scored else "")


def cell(run: PlannedRun) -> Cell:
    from localbench.pipeline import missing_simulations
    from localbench.runlog import RunDir, RunPaths

    paths = RunPaths(run.run_dir)
    have = {t.key for t in RunDir(run.run_dir).transcripts().read()} if paths.transcripts_path.exists() else set()
    planned, missing = missing_simulations(run.spec, have)
    judged = sum(1 for _ in RunDir(run.run_dir).judgments().read()) if paths.judgments_path.exists() else 0
    return Cell(run, planned, planned - sum(missing.values()), judged, paths.scores_path.exists(), paths.report_md.exists())


def estimates() -> dict[str, dict]:
    """benchmark -> the measured seconds per simulation of a CPU run (bench/study_estimates.json)."""
    return json.loads(ESTIMATES.read_text()) if ESTIMATES.exists() else {}


def estimate_s(run: PlannedRun, simulations: int, on_gpu: bool) -> float | None:
    """A rough time for the run where bench/ measured its kind (same benchmark, same model, CPU),
    else None."""
    m = estimates().get(run.benchmark)
    if m is None or on_gpu or run.model != m["model"] or run.judge != m["model"]:
        return None
    return simulations * float(m["seconds_per_simulation"])


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def plan_lines(runs: list[PlannedRun], cells: list[Cell], on_gpu: bool) -> list[str]:
    rows = []
    total_s: float | None = 0.0
    for run, c in zip(runs, cells):
        est = estimate_s(run, c.planned - c.done, on_gpu)
        total_s = None if est is None or total_s is None else total_s + est
        mark = "  (judges itself: marked)" if run.self_judged else ""
        rows.append(f"  {run.benchmark:<10} {run.model:<28} {c.planned:>5} simulations, {c.planned - c.done:>5} to run, "
                    f"judge {run.judge}{mark}; "
                    + (f"about {_duration(est)}" if est is not None else "no measurement of this kind of run in bench/")
                    + f"\n  {'':<10} {run.run_dir}")
    n = sum(c.planned for c in cells)
    judges = {r.benchmark: r.judge for r in runs}
    lines = [f"{len(runs)} runs ({len({r.benchmark for r in runs})} benchmarks × {len({r.model for r in runs})} models), "
             f"{n} simulations; judges (each loaded once): {', '.join(f'{b} {j}' for b, j in judges.items())}", *rows]
    if total_s is not None:
        lines.append(f"about {_duration(total_s)} in all on this machine (from {ESTIMATES.name}: rough, "
                     "per simulation of the embedded defaults)")
    lines.append("judge calls: counted by each run's judge stage (a simulation's calls depend on its transcript)")
    return lines


def status_lines(cells: list[Cell], cluster: dict[Path, str] | None = None) -> list[str]:
    """One line per cell; ``cluster``: run directory -> what the Slurm cluster says of its jobs
    (a submitted study, ``slurm.study_status``), shown beside what is on disk."""
    width = max(len(c.run.model) for c in cells)
    return [f"  {c.run.benchmark:<10} {c.run.model:<{width}}  {c.state}"
            + (f"  | cluster: {cluster[c.run.run_dir]}" if cluster and c.run.run_dir in cluster else "")
            for c in cells]
