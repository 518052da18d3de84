"""`localbench models`: list presets and say which are usable on this machine, and why not."""

from __future__ import annotations

import json

import typer


def register(app: typer.Typer) -> None:
    @app.command("models")
    def models(as_json: bool = typer.Option(False, "--json", help="machine-readable output")) -> None:
        """List model presets (serving/*.yaml) and whether each can run here."""
        from rich.console import Console
        from rich.table import Table

        from localbench.serving.availability import check
        from localbench.serving.engines import cuda_available
        from localbench.serving.presets import list_presets

        gpu = cuda_available()
        rows = []
        for p in list_presets():
            a = check(p, has_cuda=gpu)
            src = p.source.repo or p.source.package or p.source.path or p.source.kind
            rows.append({"name": p.name, "source": src, "dtype": p.dtype, "max_model_len": p.max_model_len,
                         "needs_gpu": p.needs_gpu, "usable": a.usable, "reason": a.reason})
        if as_json:
            typer.echo(json.dumps(rows, indent=2))
            return
        t = Table(title=f"model presets (GPU: {'yes' if gpu else 'no'})")
        for col in ("preset", "source", "dtype", "context", "usable here"):
            t.add_column(col)
        for r in rows:
            status = "[green]yes[/]" if r["usable"] else f"[red]no[/]: {r['reason']}"
            t.add_row(r["name"], str(r["source"]), r["dtype"], str(r["max_model_len"]), status)
        Console().print(t)
