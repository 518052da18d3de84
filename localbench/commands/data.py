"""`localbench data`: inspect scenario sources before running on them."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    data_app = typer.Typer(help="Inspect and validate scenario data.", no_args_is_help=True)

    @data_app.command("check")
    def check(
        source: str = typer.Argument(..., help="a directory or file of scenarios, 'builtin', or hf:NAME"),
        verbose: bool = typer.Option(False, "--verbose", "-v", help="list every warning, not one line per field"),
    ) -> None:
        """Validate every scenario file and summarise: counts per category, items, warnings by field.

        Exits 1 if any file could not be loaded.
        """
        from rich.console import Console
        from rich.table import Table

        from localbench.benchmarks.asb.check import check_source

        rep = check_source(source)
        con = Console(soft_wrap=True)
        stats = rep.per_category()
        t = Table(title=f"scenarios in {source}")
        cols = ["category", "scenarios", "private items", "people", "warnings"]
        if rep.all_upstream:
            cols.append("in paper's 352")
        for c in cols:
            t.add_column(c, justify="left" if c == "category" else "right")
        for cat, st in stats.items():
            row = [cat, str(st.scenarios), str(st.items), str(st.people), str(st.warnings)]
            if rep.all_upstream:
                row.append(str(st.paper))
            t.add_row(*row)
        tot = [sum(getattr(s, k) for s in stats.values()) for k in ("scenarios", "items", "people", "warnings", "paper")]
        t.add_row("total", *map(str, tot[:4]), *([str(tot[4])] if rep.all_upstream else []), style="bold")
        con.print(t)

        if rep.issues:
            if verbose:
                con.print("[yellow]warnings[/]")
                for i in rep.issues:
                    con.print(f"  {i}", markup=False, highlight=False)
            else:
                w = Table(title="warnings by field (one example each; --verbose lists all)")
                for c in ("field", "count", "example"):
                    w.add_column(c)
                for pattern, n, ex in rep.issues_by_field():
                    w.add_row(pattern, str(n), f"{ex.file}: {ex.message}")
                con.print(w)
        for f in rep.failed:
            con.print(f"[red]error[/]: {f.error}", highlight=False)
        n_files, n_bad = len(rep.files), len(rep.failed)
        status = "[green]ok[/]" if not n_bad else f"[red]{n_bad} failed[/]"
        con.print(f"{n_files} files: {len(rep.loaded)} loaded, {status}, {len(rep.issues)} warnings")
        if n_bad:
            raise typer.Exit(1)

    app.add_typer(data_app, name="data")
