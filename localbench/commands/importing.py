"""`localbench import NAME PATH`: someone else's published run as an ordinary run directory, for each
benchmark that declares an import command (``Benchmark.import_command``); nothing is re-simulated."""

from __future__ import annotations

import resource
import time
from pathlib import Path

import typer


class PipelineStages:
    """The pipeline's stages as a benchmark's own command may use them (``contract.RunStages``)."""

    def log(self, msg: str) -> None:
        from localbench.pipeline import log

        log(msg)

    def has_transcripts(self, run_dir: Path) -> bool:
        from localbench.runlog import RunPaths

        return RunPaths(run_dir).transcripts_path.exists()

    def judge(self, run_dir: Path, preset: str) -> None:
        from localbench.pipeline import judge_stage, spec_of

        spec = spec_of(run_dir)
        judge_stage(spec.with_model(spec.design.judge_role, preset))

    def score(self, run_dir: Path) -> tuple[float, float]:
        from localbench.pipeline import score_stage, spec_of

        t0, c0 = time.monotonic(), _cpu()
        score_stage(spec_of(run_dir))
        return time.monotonic() - t0, _cpu() - c0

    def report(self, run_dir: Path) -> None:
        from localbench.pipeline import report_stage, spec_of
        from localbench.viewer.build import refresh_run_viewer

        report_stage(spec_of(run_dir))
        self.log(refresh_run_viewer(run_dir))


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
