"""`localbench data`: inspect scenario sources before running on them."""

from __future__ import annotations

from pathlib import Path

import typer


def register(app: typer.Typer) -> None:
    data_app = typer.Typer(help="Inspect and validate scenario data.", no_args_is_help=True)

    @data_app.command("check")
    def check(
        source: str = typer.Argument(..., help="a directory or file of scenarios, 'builtin', or hf:NAME"),
        verbose: bool = typer.Option(False, "--verbose", "-v", help="list every warning, not one line per field"),
        benchmark: str = typer.Option("asb", "--benchmark", help="whose scenario format the source is in"),
    ) -> None:
        """Validate every scenario file and summarise: counts per category, items, warnings by field.

        Exits 1 if any file could not be loaded.
        """
        from rich.console import Console
        from rich.table import Table

        from localbench.benchmarks import get_benchmark

        rep = get_benchmark(benchmark).check_source(source)
        con = Console(soft_wrap=True)
        stats = rep.per_category()
        columns = {"scenarios": "scenarios", "items": "private items", "people": "people", "warnings": "warnings"}
        if rep.reference_label:
            columns["reference"] = rep.reference_label
        t = Table(title=f"scenarios in {source}")
        t.add_column("category")
        for title in columns.values():
            t.add_column(title, justify="right")
        for cat, st in stats.items():
            t.add_row(cat, *(str(getattr(st, k)) for k in columns))
        t.add_row("total", *(str(sum(getattr(s, k) for s in stats.values())) for k in columns), style="bold")
        con.print(t)

        if rep.issues:
            if verbose:
                con.print("[yellow]warnings[/]")
                for i in rep.issues:
                    con.print(f"  {i}", markup=False, highlight=False)
            else:
                w = Table(title="warnings by field (one example each; --verbose lists all)")
                for c in ("field", "count", "example"):
                    w.add_column(c, overflow="fold")  # wrapped, never cut: the file name is at the end
                for pattern, n, ex in rep.issues_by_field():
                    w.add_row(pattern, str(n), f"{_within(ex.file, source)}: {ex.message}")
                con.print(w)
        for f in rep.failed:
            con.print(f"[red]error[/]: {f.error}", highlight=False)
        n_files, n_bad = len(rep.files), len(rep.failed)
        status = "[green]ok[/]" if not n_bad else f"[red]{n_bad} failed[/]"
        con.print(f"{n_files} files: {len(rep.loaded)} loaded, {status}, {len(rep.issues)} warnings")
        if n_bad:
            raise typer.Exit(1)

    app.add_typer(data_app, name="data")


def _within(file: str, source: str) -> str:
    """A file's path relative to the checked directory (the part that tells files apart)."""
    try:
        return str(Path(file).relative_to(Path(source)))
    except ValueError:
        return file
