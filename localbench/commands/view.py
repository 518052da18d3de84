"""`localbench view RUN [RUN ...]`: write the run viewer and open it in a browser."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    @app.command("view")
    def view(
        runs: list[Path] = typer.Argument(..., help="run directories (runs/<id>); several are shown together"),
        out: Optional[Path] = typer.Option(None, "--out", help="where to write the viewer (default: RUN/view for one run)"),
        open_: bool = typer.Option(True, "--open/--no-open", help="open it in a browser where one is available"),
    ) -> None:
        """Every simulation with its conversation and judge labels: filter, open one, compare two side by side."""
        from localbench.viewer.build import open_in_browser, write_viewer

        summary = write_viewer(runs, out)
        typer.echo(summary.line())
        if open_ and not open_in_browser(summary.index):
            typer.echo(f"no browser here: open {summary.index.resolve().as_uri()} on a machine with one")
