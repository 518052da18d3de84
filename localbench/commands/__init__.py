"""CLI sub-commands, one module each; every module exposes register(app: typer.Typer)."""
