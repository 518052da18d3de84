"""`localbench study plan | run | submit | status | compare STUDY.yaml`: several models across the benchmarks in one file.

A study (``localbench.study``) is a set of ordinary runs, one per (benchmark, model), in a folder
beside the study file; `compare` reads them. These commands plan, run and inspect it; `localbench
compare STUDY.yaml` makes the tables.
"""

from __future__ import annotations

from pathlib import Path

import typer

from localbench.runlog import RunFiles

study_app = typer.Typer(help="Several models across the benchmarks, from one study file: plan, run (here) or "
                             "submit (Slurm), status, compare.", no_args_is_help=True)

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


@study_app.command("submit")
def submit(study: Path = StudyFile,
           dry_run: bool = typer.Option(False, "--dry-run", help="write the scripts and print the sbatch commands; "
                                                                  "submit nothing"),
           out: Path = typer.Option(None, "--out", help="--dry-run: where the scripts go (default: "
                                                         "a dry-run folder in the study's Slurm folder)"),
           no_fit_check: bool = typer.Option(False, "--no-fit-check",
                                             help="submit even if a model does not fit the GPUs slurm.gres names")) -> None:
    """Submit the study to Slurm: per (benchmark, model) a shard array and a merge job; per judge preset
    one judge server job whose URL every merge job it serves reads (those hold no GPU); a judge-stop
    job that cancels each server once its merges have ended. `study status` then reads the cluster."""
    from localbench.commands.models import fit_problems
    from localbench.errors import UserError
    from localbench.slurm.study import dry_run as render_dry_run
    from localbench.slurm.study import plan_study, server_fit_problems, submit_study
    from localbench.study.spec import read_study

    s = read_study(study)
    plan = plan_study(s)
    if plan.reported:
        typer.echo(f"# {len(plan.reported)} run(s) already reported, not submitted again: "
                   + ", ".join(f"{r.benchmark} × {r.model}" for r in plan.reported))
    if not plan.runs:
        typer.echo(f"study {s.title}: every run is already reported; nothing to submit")
        return
    for run, rp in plan.runs if not no_fit_check else []:
        problems = fit_problems(rp, study)
        if problems:
            raise UserError(f"{study}: field 'slurm.gres': run {run.benchmark} × {run.model}: {problems[0]} "
                            "(--no-fit-check submits anyway)")
    problems = [] if no_fit_check else server_fit_problems(plan)
    if problems:
        raise UserError(f"{study}: field 'slurm.judge_server.gres': {problems[0]} (--no-fit-check submits anyway)")
    if dry_run:
        folder = out or plan.folder / "dry-run"
        commands = render_dry_run(plan, folder)
        typer.echo(f"# study {s.title}: {len(plan.runs)} runs, {len(plan.servers)} judge server(s); "
                   f"scripts written to {folder}")
        typer.echo("\n".join(commands))
        typer.echo("# (dry run: nothing submitted)")
        return
    rec = submit_study(plan, log=_log)
    typer.echo(f"submitted study {s.title}: {len(rec.runs)} runs, {len(rec.servers)} judge server(s); "
               f"job ids in {plan.record_file}")
    typer.echo(f"follow it: localbench study status {study}")


def _cluster(s) -> tuple[dict[Path, str], list[str]]:
    """What the cluster says of a submitted study's runs and judge servers (nothing if never submitted)."""
    from localbench.slurm.study import StudyRecord
    from localbench.slurm.study_status import run_cluster_state, server_lines

    folder = s.out_dir / RunFiles.SLURM
    f = folder / "study-submission.json"
    if not f.exists():
        return {}, []
    rec = StudyRecord.model_validate_json(f.read_text())
    return {Path(d): run_cluster_state(d) for d in rec.runs.values()}, server_lines(rec, folder)


@study_app.command("status")
def status(study: Path = StudyFile) -> None:
    """What each (benchmark, model) cell holds: simulations done of planned, judged, scored, reported;
    for a submitted study also its jobs' state on the cluster (queued, running, failed, done) and the
    judge servers'."""
    from localbench.study.status import status_lines

    s, _, cells = _cells(study)
    cluster, servers = _cluster(s)
    done = sum(c.state == "done" for c in cells)
    typer.echo(f"study {s.title}: {done} of {len(cells)} runs done ({s.out_dir})")
    typer.echo("\n".join(status_lines(cells, cluster)))
    if servers:
        typer.echo("\n".join(servers))


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
