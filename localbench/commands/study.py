"""`localbench study plan | run | status | compare STUDY.yaml`: several models across the benchmarks in one file.

A study (``localbench.study``) is a set of ordinary runs, one per (benchmark, model), in a folder
beside the study file; `compare` reads them. These commands plan, run and inspect it; `localbench
compare STUDY.yaml` makes the tables.
"""

from __future__ import annotations

from pathlib import Path

import typer

study_app = typer.Typer(help="Several models across the benchmarks, from one study file: plan, run, status, "
                             "compare.", no_args_is_help=True)

StudyFile = typer.Argument(..., exists=False, help="the study file (study.yaml; docs/study.md)")


def _log(line: str) -> None:
    typer.echo(f"[study] {line}", err=True)


def _cells(path: Path):
    from localbench.study.plan import plan_runs
    from localbench.study.spec import read_study
    from localbench.study.status import cell

    study = read_study(path)
    runs = plan_runs(study)
    return study, runs, [cell(r) for r in runs]


@study_app.command("plan")
def plan(study: Path = StudyFile) -> None:
    """The study's runs (benchmark × model), their simulations and judges, and a rough time where
    bench/ measured this kind of run on this kind of machine. Nothing is run."""
    from localbench.serving.session import detect_device
    from localbench.study.status import plan_lines

    s, runs, cells = _cells(study)
    typer.echo(f"study {s.title}: runs in {s.out_dir}")
    typer.echo("\n".join(plan_lines(runs, cells, on_gpu=detect_device().is_cuda)))


@study_app.command("run")
def run(study: Path = StudyFile,
        progress: bool = typer.Option(None, "--progress/--no-progress", help="progress bars (default: on a terminal)")) -> None:
    """Run every (benchmark, model) not yet reported, one engine at a time; each benchmark's judge is
    loaded once for all its models. Rerunning resumes; adding a model adds only its runs."""
    from localbench.study.run import run_study
    from localbench.study.spec import read_study
    from localbench.study.status import cell, status_lines

    s = read_study(study)
    runs, times = run_study(s, progress=progress, log=_log)
    typer.echo(f"study {s.title}: {len(runs)} runs in {s.out_dir}; judge engines loaded: {times.judge_loads}")
    typer.echo("\n".join(status_lines([cell(r) for r in runs])))
    typer.echo(f"compare them: localbench compare {study}")


@study_app.command("status")
def status(study: Path = StudyFile) -> None:
    """What each (benchmark, model) cell holds: simulations done of planned, judged, scored, reported."""
    from localbench.study.status import status_lines

    s, _, cells = _cells(study)
    done = sum(c.state == "done" for c in cells)
    typer.echo(f"study {s.title}: {done} of {len(cells)} runs done ({s.out_dir})")
    typer.echo("\n".join(status_lines(cells)))


@study_app.command("compare")
def compare(study: Path = StudyFile,
            out: Path = typer.Option(None, "--out", help="where to write (default: compare/ beside the study file)"),
            ci: bool = typer.Option(False, "--ci", help="cells as 'mean \\[low, high]' instead of 'mean ± half-width'")) -> None:
    """The study's runs compared (`localbench compare STUDY.yaml`: tables, figures, compare.html)."""
    from localbench.commands.compare import compare_inputs

    result = compare_inputs([study], out, ci)
    typer.echo(result.headline_markdown)
    typer.echo(str(result.html))


def register(app: typer.Typer) -> None:
    app.add_typer(study_app, name="study")
