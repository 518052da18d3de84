"""`localbench report RUN_DIR`: re-render tables, figures, report.html and report.md from a run's files.

Reads scores.json (required), spec.yaml and scenario_scores.jsonl; loads no model and imports no
engine, so it runs anywhere the run directory was copied to.
"""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    @app.command("report")
    def report(
        run_dir: Path = typer.Argument(..., help="a finished run directory (runs/<id>) holding scores.json"),
        ci: bool = typer.Option(False, "--ci", help="cells as 'mean \\[low, high]' instead of 'mean ± half-width'"),
    ) -> None:
        """Write tables/, figures/, report.html and report.md into RUN_DIR; prints the report.html path."""
        from localbench.report import render_report

        typer.echo(str(render_report(run_dir, fmt="ci" if ci else "pm")))
