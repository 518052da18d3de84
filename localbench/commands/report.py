"""`localbench report RUN_DIR`: re-render tables, figures, report.html and report.md from a run's files.

Reads scores.json (required), spec.yaml and scenario_scores.jsonl; loads no model and imports no
engine, so it runs anywhere the run directory was copied to. It also rewrites the run's viewer
(RUN/view/, which the report's table cells link to) where the run's scenarios can be loaded.
"""

from __future__ import annotations

import time
from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        run_dir: Path = typer.Argument(..., help="a finished run directory (runs/<id>) holding scores.json"),
        ci: bool = typer.Option(False, "--ci", help="cells as 'mean \\[low, high]' instead of 'mean ± half-width'"),
    ) -> None:
        """Write tables/, figures/, report.html and report.md into RUN_DIR; prints the report.html path."""
        from localbench.pipeline import log
        from localbench.report import render_report
        from localbench.viewer.build import refresh_run_viewer

        t0 = time.monotonic()
        path = render_report(run_dir, fmt="ci" if ci else "pm")
        log(f"report: {path} ({time.monotonic() - t0:.1f} s)")
        if (run_dir / "transcripts.jsonl").exists():
            log(refresh_run_viewer(run_dir))
        typer.echo(str(path))
