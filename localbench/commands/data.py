"""`localbench data`: inspect scenario sources before running on them."""

from __future__ import annotations

from pathlib import Path

import typer

from localbench.registry import DEFAULT_BENCHMARK


def register(app: typer.Typer) -> None:
    data_app = typer.Typer(help="Inspect and validate scenario data.", no_args_is_help=True)

    @data_app.command("check")
    def check(
        source: str = typer.Argument(..., help="a directory or file of scenarios, 'builtin', or hf:NAME"),
        verbose: bool = typer.Option(False, "--verbose", "-v", help="list every warning, not one line per field"),
        benchmark: str = typer.Option(DEFAULT_BENCHMARK, "--benchmark", help="whose scenario format the source is in"),
    ) -> None:
        """Validate every scenario file and summarise: counts per category, items, warnings by field.

        Exits 1 if any file could not be loaded.
        """
        from rich.console import Console
        from rich.table import Table

        from localbench.registry import get_benchmark

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
                    line = getattr(ex, "line", None)  # JSONL sources: one scenario per line
                    w.add_row(pattern, str(n), f"{_within(ex.file, source)}{f':{line}' if line else ''}: {ex.message}")
                con.print(w)
        for f in rep.failed:
            con.print(f"[red]error[/]: {f.error}", highlight=False)
        n_files, n_bad = len(rep.files), len(rep.failed)
        status = "[green]ok[/]" if not n_bad else f"[red]{n_bad} failed[/]"
        unit = "records" if Path(source).is_file() else "files"  # a JSONL file holds one scenario a line
        con.print(f"{n_files} {unit}: {len(rep.loaded)} loaded, {status}, {len(rep.issues)} warnings")
        if n_bad:
            raise typer.Exit(1)

    @data_app.command("gen")
    def gen(
        benchmark: str = typer.Argument(..., help="the benchmark whose scenarios to generate"),
        n: int = typer.Option(48, "--n", min=1, help="how many scenarios"),
        seed: int = typer.Option(0, "--seed", help="generation seed (same seed, same scenarios)"),
        out: Path = typer.Option(..., "--out", help="directory to write one scenario file each into"),
        overwrite: bool = typer.Option(False, "--overwrite", help="replace files that differ"),
        model: str | None = typer.Option(None, "--model", help="a preset that writes the text, where the "
                                                               "benchmark's generator can use one"),
    ) -> None:
        """Generate new scenarios (reproducible for a seed) in the benchmark's own format."""
        from localbench.errors import UserError
        from localbench.registry import get_benchmark

        bm = get_benchmark(benchmark)
        if model is not None and not bm.generator_takes_model:
            raise UserError(f"--model: benchmark '{benchmark}''s generator writes from templates only")
        paths = bm.generate_scenarios(n, seed, out, overwrite=overwrite, model=model)
        typer.echo(f"{len(paths)} scenarios written to {out} (seed {seed}); check them with "
                   f"`localbench data check --benchmark {benchmark} {out}`")

    @data_app.command("export")
    def export(
        fmt: str = typer.Argument(..., metavar="FORMAT", help="the format to write, one a benchmark offers (argus: "
                                                              "SopriBench users as its released code reads them)"),
        source: str = typer.Argument("builtin", help="the scenario source to convert"),
        out: Path = typer.Option(..., "--out", help="folder to write into"),
        overwrite: bool = typer.Option(False, "--overwrite", help="replace files that differ"),
    ) -> None:
        """Write a scenario source in another tool's input format (the benchmark that offers FORMAT
        reads the source), so that tool can run on localbench's scenarios."""
        from localbench.errors import UserError
        from localbench.registry import get_benchmark, registered

        offered = {name: b for b in registered() for name in get_benchmark(b).scenario_exports()}
        if fmt not in offered:
            raise UserError(f"unknown format '{fmt}' (formats: {', '.join(offered) or 'none'})")
        bm = get_benchmark(offered[fmt])
        paths = bm.scenario_exports()[fmt](source, out, overwrite=overwrite)
        typer.echo(f"{len(paths)} scenarios written to {out} as {fmt}; check them with "
                   f"`localbench data check --benchmark {bm.name} {out}`")

    @data_app.command("design")
    def design(benchmark: str = typer.Option(DEFAULT_BENCHMARK, "--benchmark", help="the benchmark to describe")) -> None:
        """What a benchmark declares: its axes (conditions, categories), roles, metrics, settings and defaults."""
        from rich.console import Console
        from rich.table import Table

        from localbench.errors import UserError
        from localbench.registry import UnknownBenchmark, design_of

        try:
            d = design_of(benchmark)
        except UnknownBenchmark as e:
            raise UserError(str(e)) from e
        con = Console(soft_wrap=True)
        con.print(f"[bold]{d.title}[/] ({d.name})")
        for axis in d.axes:
            flag = "--conditions" if axis.kind == "condition" else "--categories"
            flag += f" or --{axis.flag}" if axis.flag else ""
            default = f"; default {', '.join(axis.default)}" if axis.default else ""
            con.print(f"{axis.label} ({flag}): {', '.join(axis.values)}{default}", highlight=False)
        roles = Table(title="roles (--agent is the first, --judge the judge; --model ROLE=PRESET for any)")
        for c in ("role", "plays", "defaults to"):
            roles.add_column(c)
        for r in d.roles:
            rules = "".join(f"; --judge {k}: {v}" for k, v in r.rules.items())
            roles.add_row(r.name + (" (judge)" if r.judge else ""), r.description + rules,
                          r.default or "the packaged model")
        con.print(roles)
        metrics = Table(title="metrics")
        for c in ("metric", "better", "headline of", "description"):
            metrics.add_column(c, overflow="fold")
        heads = {m: [c for c, h in d.headline.items() if h == m] for m in d.headline.values()}
        for m in d.metrics:
            if m.glossary:
                metrics.add_row(m.name, "higher" if m.higher_is_better else "lower", ", ".join(heads.get(m.name, [])),
                                m.description)
        con.print(metrics)
        props = d.settings.model_json_schema().get("properties", {})
        if props:
            settings = Table(title="settings (a spec's extra: section)")
            for c in ("setting", "type", "default", "what it is"):
                settings.add_column(c, overflow="fold")
            for name, p in props.items():
                settings.add_row(f"extra.{name}", _schema_type(p), repr(p.get("default")), p.get("description", ""))
            con.print(settings)
        con.print(f"round limits: {', '.join(f'{k} {v}' for k, v in d.max_rounds.items())}", highlight=False)

    app.add_typer(data_app, name="data")


def _schema_type(prop: dict) -> str:
    """A setting's JSON-schema type in a few words: "integer ≥ 1", "'model' | 'exact'", "object"."""
    alts = [p for p in prop.get("anyOf", [prop]) if p.get("type") != "null"]
    words = []
    for p in alts:
        if "enum" in p:
            words.append(" | ".join(repr(v) for v in p["enum"]))
        else:
            bound = "".join(f" {op} {p[k]}" for k, op in (("minimum", "≥"), ("maximum", "≤")) if k in p)
            words.append(f"{p.get('type', 'any')}{bound}")
    return " | ".join(words)


def _within(file: str, source: str) -> str:
    """A file's path relative to the checked directory (the part that tells files apart); a checked
    file by its name."""
    if Path(file) == Path(source):
        return Path(file).name
    try:
        return str(Path(file).relative_to(Path(source)))
    except ValueError:
        return file
