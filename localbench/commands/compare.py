"""`localbench compare RUN... | STUDY.yaml`: several runs side by side, as a paper prints them.

Reads each run's scores.json, scenario_scores.jsonl and spec.yaml (no model is loaded): a models ×
benchmarks headline table, per benchmark a models × metrics table, the per-category breakdown, ranks
with bootstrap intervals and paired differences on the same scenarios (Holm across pairs), as CSV,
Markdown, LaTeX and HTML, with figures as PNG, SVG and PDF.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def compare_inputs(inputs: list[Path], out: Optional[Path] = None, ci: bool = False, view: bool = True,
                   judge_eval: Optional[list[str]] = None):
    """The comparison of run directories, or of one study file's runs (``localbench compare`` and
    ``localbench study compare``): written under ``out``; returns what was written."""
    from localbench.errors import UserError
    from localbench.study.compare import is_study_file, study_file_runs
    from localbench.study.compare_write import write_comparison

    if len(inputs) == 1 and is_study_file(inputs[0]):
        runs, default = study_file_runs(inputs[0]), inputs[0].parent / "compare"
    elif any(p.is_file() for p in inputs):
        raise UserError("compare: give run directories, or one study file alone")
    else:
        runs, default = inputs, Path("compare")
    warnings = []
    if judge_eval:
        from localbench.judging.reliability import floor_judge_warnings
        from localbench.judging.trust import eval_dirs
        from localbench.report.data import load_scores
        from localbench.runlog import RunPaths

        judges = dict.fromkeys(r.judge for d in runs for r in load_scores(RunPaths(d).scores_path).rows)
        warnings = [w for ev in eval_dirs(judge_eval) for j in judges for w in floor_judge_warnings(str(ev), j)]
    return write_comparison(runs, out or default, fmt="ci" if ci else "pm", view=view, judge_warnings=warnings)


def register(app: typer.Typer) -> None:
    @app.command("compare")
    def compare(
        inputs: list[Path] = typer.Argument(..., help="run directories (runs/<id>), or one study file (study.yaml)"),
        out: Optional[Path] = typer.Option(None, "--out", help="where to write (default: compare/ beside the study "
                                                               "file, ./compare for runs)"),
        ci: bool = typer.Option(False, "--ci", help="cells as 'mean \\[low, high]' instead of 'mean ± half-width'"),
        view: bool = typer.Option(True, "--view/--no-view", help="write a viewer of every run into OUT/view (the "
                                                                  "HTML page's cells open their simulations there)"),
        judge_eval: Optional[list[str]] = typer.Option(
            None, "--judge-eval", help="a `localbench judges eval` directory: a judge it found not above the best "
                                       "cheater marks every cell it judged (repeatable)"),
    ) -> None:
        """Compare models across runs: tables (md, tex, csv, html) and figures (png, svg, pdf); prints the
        headline table and the path of compare.html."""
        result = compare_inputs(inputs, out, ci, view, judge_eval)
        typer.echo(result.headline_markdown)
        typer.echo(str(result.html))
