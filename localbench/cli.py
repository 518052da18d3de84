"""The `localbench` command. Each sub-command lives in localbench/commands/<name>.py.

Commands import engines and benchmarks inside their functions, so `localbench --help` is instant
and works without torch or vllm installed.
"""

from __future__ import annotations

import importlib
import sys

import typer

app = typer.Typer(
    name="localbench",
    help="Agentic privacy benchmarks on open-weights models you serve yourself.",
    no_args_is_help=False,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# Modules under localbench/commands that each define register(app).
COMMAND_MODULES = ["models", "generate", "serve", "data", "simulate", "run", "judges", "slurm", "report", "view",
                   "importing", "doctor", "study", "compare", "export"]


def _register_all() -> None:
    for name in COMMAND_MODULES:
        try:
            mod = importlib.import_module(f"localbench.commands.{name}")
        except ModuleNotFoundError as e:
            if e.name == f"localbench.commands.{name}":
                continue  # command not built yet
            raise
        mod.register(app)


_register_all()


INTERRUPTED = 130  # typer's exit status for Ctrl-C


def main() -> None:
    """Entry point: clear one-line errors for bad input instead of tracebacks. The exit status says
    what kind of error it was (localbench.errors: 1 incomplete, 2 bad input, 3 cannot write)."""
    from localbench.errors import STORAGE_ERRNOS, StorageError, UserError

    try:
        app()
    except UserError as e:
        typer.secho(f"error: {e}", fg=typer.colors.RED, err=True)
        sys.exit(e.exit_code)
    except OSError as e:  # a path that cannot be written (disk full, read-only, --out is a file)
        if e.errno not in STORAGE_ERRNOS:
            raise
        err = StorageError.from_os_error(e)
        typer.secho(f"error: {err}", fg=typer.colors.RED, err=True)
        sys.exit(err.exit_code)
    except SystemExit as e:
        if e.code == INTERRUPTED:
            typer.secho("interrupted: everything that finished is kept (each result is written as it finishes); "
                        "rerun the same command to resume", fg=typer.colors.YELLOW, err=True)
        raise


if __name__ == "__main__":
    main()
