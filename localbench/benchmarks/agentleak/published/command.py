"""`localbench import agentleak-traces PATH`: a peer's published traces as an ordinary run directory,
which `localbench score`, `report` and `view` then read like any other (nothing is re-simulated)."""

from __future__ import annotations

import time
from pathlib import Path

import typer

from localbench.benchmarks.contract import RunStages
from localbench.errors import UserError


def import_command(stages: RunStages):
    """The command's function (typer reads its parameters), over the shared stages it is given."""

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

        if judge and sample is None:
            raise UserError("--judge judges the Tier-3 sample: give --sample N too")
        t0 = time.monotonic()
        existing = out / run_id if run_id and study is not None else None
        reused = existing is not None and stages.has_transcripts(existing)
        if reused:
            run_dir = existing
            stages.log(f"{run_dir}: already imported; rescoring it")
        else:
            summary = import_traces(path, out, run_id, sample, seed)
            stages.log(f"{summary.line()} ({time.monotonic() - t0:.1f} s)")
            for p in summary.problems[:5]:
                stages.log(f"not imported: {p}")
            run_dir = summary.run_dir
        t_import = time.monotonic() - t0
        if judge:
            stages.judge(run_dir, judge)  # the run's sample (UserError: none)
        if score or study is not None:
            t_score, cpu_score = stages.score(run_dir)
            stages.report(run_dir)
            if study is not None:
                from localbench.benchmarks.agentleak.published.study import write_readme

                readme = write_readme(run_dir, study, None if reused else t_import, t_score, cpu_score)
                stages.log(f"study: {readme}")
        typer.echo(str(run_dir))

    return agentleak_traces
