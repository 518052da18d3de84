"""`localbench import agentleak-traces PATH`: a peer's published traces as an ordinary run directory,
which `localbench score`, `report` and `view` then read like any other (nothing is re-simulated)."""

from __future__ import annotations

import time
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    imp = typer.Typer(help="Import published traces as a run directory (nothing is re-simulated).",
                      no_args_is_help=True)
    app.add_typer(imp, name="import")

    @imp.command("agentleak-traces")
    def agentleak_traces(
        path: Path = typer.Argument(..., help="a .jsonl.gz, a .jsonl, or a folder of the AgentLeak harness's trace_*.json"),
        out: Path = typer.Option(Path("runs"), "--out", help="where the run directory goes"),
        run_id: str = typer.Option(None, "--run-id", help="the run directory's name (default: from the source's hash)"),
        sample: int = typer.Option(None, "--sample", min=1,
                                   help="the Tier-3 sample: N channel messages stratified by model, vertical and "
                                   "channel (every trace is still imported and scored by Tiers 1-2)"),
        seed: int = typer.Option(0, "--seed", help="the sample's seed"),
        judge: str = typer.Option(None, "--judge", help="judge the --sample with this judge preset (AgentLeak's "
                                  "Tier-3 leak judge); later: `localbench judge RUN --judge PRESET`"),
        score: bool = typer.Option(True, "--score/--no-score", help="score and report the run after importing"),
        study: Path = typer.Option(None, "--study", help="also write the published-traces study (README.md and "
                                   "figures) into this folder; an existing run of the same --run-id is rescored"),
    ) -> None:
        """Write RUN/spec.yaml and RUN/transcripts.jsonl (one transcript per trace); prints the run directory."""
        from localbench.benchmarks.agentleak.published.importer import import_traces
        from localbench.pipeline import Resolved, log, report_stage, score_stage, spec_of

        if judge and sample is None:
            from localbench.errors import UserError

            raise UserError("--judge judges the Tier-3 sample: give --sample N too")
        t0 = time.monotonic()
        existing = out / run_id if run_id and study is not None else None
        reused = existing is not None and (existing / "transcripts.jsonl").exists()
        if reused:
            run_dir = existing
            log(f"{run_dir}: already imported; rescoring it")
        else:
            summary = import_traces(path, out, run_id, sample, seed)
            log(f"{summary.line()} ({time.monotonic() - t0:.1f} s)")
            for p in summary.problems[:5]:
                log(f"not imported: {p}")
            run_dir = summary.run_dir
        t_import = time.monotonic() - t0
        if not (judge or score or study is not None):
            typer.echo(str(run_dir))
            return
        res = Resolved(spec_of(run_dir))  # the imported spec parsed once, its scenarios loaded once
        spec = res.spec
        if judge:
            from localbench.pipeline import judge_stage

            judge_stage(spec.with_model(spec.design.judge_role, judge), res=res)  # the run's sample (UserError: none)
        if score or study is not None:
            import resource

            def cpu() -> float:
                return sum(getattr(resource.getrusage(w), f) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
                           for f in ("ru_utime", "ru_stime"))

            c0 = cpu()
            score_stage(spec, res)
            t_score, cpu_score = time.monotonic() - t0 - t_import, cpu() - c0
            report_stage(spec)
            from localbench.rejudge import LoadedRun
            from localbench.viewer.build import refresh_run_viewer

            log(refresh_run_viewer(run_dir, LoadedRun.of(res, run_dir)))
            if study is not None:
                from localbench.benchmarks.agentleak.published.study import write_readme

                readme = write_readme(run_dir, study, None if reused else t_import, t_score, cpu_score)
                log(f"study: {readme}")
        typer.echo(str(run_dir))
