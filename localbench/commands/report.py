"""`localbench report RUN_DIR`: re-render tables, figures, report.html and report.md from a run's files.

Reads scores.json (required), spec.yaml and scenario_scores.jsonl; loads no model and imports no
engine, so it runs anywhere the run directory was copied to. It also rewrites the run's viewer
(RUN/view/, which the report's table cells link to) where the run's scenarios can be loaded.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

import typer

from localbench.runlog import RunFiles


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        run_dir: Path = typer.Argument(..., help=f"a finished run directory (runs/<id>) holding {RunFiles.SCORES}"),
        ci: bool = typer.Option(False, "--ci", help="cells as 'mean \\[low, high]' instead of 'mean ± half-width'"),
        judge_eval: Optional[str] = typer.Option(
            None, "--judge-eval", help="a `localbench judges eval` directory (or a folder of them) that measured the "
                                       "run's judge: a judge not above the best cheater there is listed in the judge "
                                       "warnings (the trust section is computed when scoring: `localbench score RUN "
                                       "--judge-eval EVAL`)"),
        cross_check: Optional[str] = typer.Option(
            None, "--cross-check", help="add a second detector's agreement and cause tables, by a name the run's "
                                        "benchmark offers (the benchmark's docs page lists them)"),
    ) -> None:
        """Write tables/, figures/, report.html and report.md into RUN_DIR; prints the report.html path."""
        from localbench.pipeline import log
        from localbench.report import render_report
        from localbench.runlog import RunPaths
        from localbench.viewer.build import refresh_run_viewer

        t0 = time.monotonic()
        warnings = []
        if judge_eval:  # the eval that measured the run's judges: one below its cheater floor is warned of
            from localbench.judging.reliability import floor_judge_warnings
            from localbench.judging.trust import eval_dirs
            from localbench.report.data import load_scores

            judges = dict.fromkeys(r.judge for r in load_scores(RunPaths(run_dir).scores_path).rows)
            warnings = [w for ev in eval_dirs(judge_eval) for j in judges for w in floor_judge_warnings(str(ev), j)]
        extra = []
        if cross_check:  # a second detector beside the run's own (commands/export.py reads the run for it)
            from localbench.commands.export import cross_check_section

            extra.append(cross_check_section(run_dir, cross_check))
        path = render_report(run_dir, fmt="ci" if ci else "pm", judge_warnings=warnings, extra_sections=extra)
        log(f"report: {path} ({time.monotonic() - t0:.1f} s)")
        if RunPaths(run_dir).transcripts_path.exists():
            log(refresh_run_viewer(run_dir))
        typer.echo(str(path))
