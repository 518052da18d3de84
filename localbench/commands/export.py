"""`localbench export NAME RUN`: a finished run in another tool's format, for each format a
benchmark offers (``Benchmark.exports``; AgentLeak's: ``agentleak-toolkit``, the channel messages as
traces of AgentLeak's own toolkit). ``cross_check_section`` gives `localbench report --cross-check`
the section of a benchmark's second detector (``Benchmark.cross_checks``)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def _loaded(run_dir: Path):
    """The run (spec, benchmark, transcripts, scenarios) and its scenario scores (UserError: not scored)."""
    from localbench.errors import UserError
    from localbench.rejudge import LoadedRun
    from localbench.runlog import RunDir, RunPaths

    if not RunPaths(run_dir).scenario_scores_path.exists():
        raise UserError(f"{run_dir}: no scenario_scores.jsonl; score the run first (`localbench score {run_dir}`)")
    return LoadedRun.read(run_dir), list(RunDir(run_dir).scenario_scores().read())


def _offered(name: str, offers: dict, what: str, benchmark: str):
    from localbench.errors import UserError

    if name not in offers:
        raise UserError(f"{what} {name}: not offered for a run of {benchmark} (offered: {', '.join(offers) or 'none'})")
    return offers[name]


def cross_check_section(run_dir: Path, name: str):
    """The report's section for ``--cross-check NAME``, by the run's benchmark."""
    from localbench.report.render import VIEWER, ExtraSection

    run, scores = _loaded(run_dir)
    build = _offered(name, run.benchmark.cross_checks(), "--cross-check", run.benchmark.name)
    title, intro, tables = build(run, scores, VIEWER)
    return ExtraSection("cross-check", title, intro, tables)


def register(app: typer.Typer) -> None:
    from localbench.registry import get_benchmark, registered

    exp = typer.Typer(help="Write a finished run in another tool's format.", no_args_is_help=True)
    app.add_typer(exp, name="export")
    names = dict.fromkeys(n for b in registered() for n in get_benchmark(b).exports())

    def command(name: str):
        def export(
            run_dir: Path = typer.Argument(..., help="a scored run of a benchmark that offers this format"),
            out: Optional[Path] = typer.Option(None, "--out", help=f"where it goes (default RUN/export/{name})"),
        ) -> None:
            """Write the run in this format (one file per simulation and an index); prints the folder."""
            run, scores = _loaded(run_dir)
            write = _offered(name, run.benchmark.exports(), "export", run.benchmark.name)
            typer.echo(str(write(run, scores, out or run_dir / "export" / name)))

        return export

    for name in names:
        exp.command(name)(command(name))
