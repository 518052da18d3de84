"""`localbench import NAME PATH`: someone else's published run as an ordinary run directory, for each
benchmark that declares an import command (``Benchmark.import_command``); nothing is re-simulated."""

from __future__ import annotations

import resource
import time
from pathlib import Path
from typing import Any

import typer


class PipelineStages:
    """The pipeline's stages as a benchmark's own command may use them (``contract.RunStages``); each
    run's spec is parsed, and its scenarios loaded, once for all of them."""

    def __init__(self) -> None:
        self._runs: dict[Path, Any] = {}

    def _resolved(self, run_dir: Path):
        from localbench.pipeline import Resolved, spec_of

        if run_dir not in self._runs:
            self._runs[run_dir] = Resolved(spec_of(run_dir))
        return self._runs[run_dir]

    def log(self, msg: str) -> None:
        from localbench.pipeline import log

        log(msg)

    def has_transcripts(self, run_dir: Path) -> bool:
        from localbench.runlog import RunPaths

        return RunPaths(run_dir).transcripts_path.exists()

    def judge(self, run_dir: Path, preset: str) -> None:
        from localbench.pipeline import judge_stage

        res = self._resolved(run_dir)
        judge_stage(res.spec.with_model(res.spec.design.judge_role, preset), res=res)

    def score(self, run_dir: Path) -> tuple[float, float]:
        from localbench.pipeline import score_stage

        res = self._resolved(run_dir)
        t0, c0 = time.monotonic(), _cpu()
        score_stage(res.spec, res)
        return time.monotonic() - t0, _cpu() - c0

    def report(self, run_dir: Path) -> None:
        from localbench.pipeline import report_stage
        from localbench.rejudge import LoadedRun
        from localbench.viewer.build import refresh_run_viewer

        res = self._resolved(run_dir)
        report_stage(res.spec)
        self.log(refresh_run_viewer(run_dir, LoadedRun.of(res, run_dir)))


def _cpu() -> float:
    """CPU seconds of this process and its children."""
    return sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for f in ("ru_utime", "ru_stime"))


def register(app: typer.Typer) -> None:
    from localbench.registry import get_benchmark, registered

    imp = typer.Typer(help="Import published traces as a run directory (nothing is re-simulated).",
                      no_args_is_help=True)
    app.add_typer(imp, name="import")
    stages = PipelineStages()
    for name in registered():
        command = get_benchmark(name).import_command(stages)
        if command is not None:
            imp.command(name)(command)
