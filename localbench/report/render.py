"""Render a run's report: tables/ (md, tex, csv), figures/ (png), report.html and report.md.

Everything is rebuilt from the run directory's files alone. report.html is self-contained (inline
CSS, figures as base64 PNG); report.md carries the same content and links the PNG files.
"""

from __future__ import annotations

import base64
import datetime as _dt
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import markupsafe

from localbench import __version__
from localbench.files import write_atomic
from localbench.design import Design
from localbench.report.data import RunData, load_run
from localbench.report.figures import FigureResult, write_figures
from localbench.report.tables import CellFormat, Table, comparisons_table, write_tables

TEMPLATES = Path(__file__).parent / "templates"


@dataclass
class Report:
    """What a render wrote."""

    html: Path
    markdown: Path
    tables: list[Path] = field(default_factory=list)
    figures: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _flatten(d: Any, prefix: str = "") -> list[tuple[str, str]]:
    """Nested provenance mappings as (dotted key, value) pairs."""
    if isinstance(d, dict):
        out: list[tuple[str, str]] = []
        for k, v in d.items():
            out += _flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(d, list):
        return [(prefix, ", ".join(str(x) for x in d))]
    return [(prefix, "" if d is None else str(d))]


def spec_summary(run: RunData) -> list[tuple[str, str]]:
    """The facts a reader needs first: what was run, on which models, how many times."""
    s = run.spec
    rows: list[tuple[str, str]] = [("benchmark", run.scores.benchmark)]
    rows.append(("agent models", ", ".join(run.models()) or "—"))
    rows.append(("judges", ", ".join(run.judges()) or "—"))
    if isinstance(s.get("models"), dict):
        rows += [(f"spec models.{k}", str(v)) for k, v in s["models"].items() if v]
    rows.append(("levels", ", ".join(run.levels()) or "—"))
    rows.append(("categories", ", ".join(run.ordered_categories(run.categories())) or "—"))
    for key in ("scenarios", "limit", "seeds", "seed"):
        if key in s:
            rows.append((key if key != "seed" else "run seed", str(s[key])))
    if run.scenarios is not None:
        sims = Counter(x.category for x in run.scenarios)
        scen = {c: len({x.scenario for x in run.scenarios if x.category == c}) for c in sims}
        rows.append(("simulations", f"{len(run.scenarios)} ({', '.join(f'{c} {sims[c]}' for c in run.ordered_categories(sims))})"))
        rows.append(("scenarios per category", ", ".join(f"{c} {scen[c]}" for c in run.ordered_categories(scen))))
    b = run.scores.bootstrap
    if b:
        rows.append(("bootstrap", ", ".join(f"{k} {v}" for k, v in b.items())))
    return rows


def provenance(run: RunData) -> dict[str, list[tuple[str, str]]]:
    """Sections of spec.yaml other than the spec itself: versions, model revisions, hashes…"""
    doc = run.spec_doc
    out: dict[str, list[tuple[str, str]]] = {}
    times = [(k, str(doc[k])) for k in ("created",) if k in doc]
    if doc.get("resumed"):
        times.append(("resumed", ", ".join(str(x) for x in doc["resumed"])))
    if times:
        out["run"] = times
    for k, v in doc.items():
        if k in ("spec", "created", "resumed"):
            continue
        out[str(k)] = _flatten(v)
    return out


def failure_summary(run: RunData) -> dict[str, Any]:
    """Failed judge calls (scores.json) and failed per-scenario values, by metric."""
    by_metric: Counter[str] = Counter()
    if run.scenarios is not None:
        for s in run.scenarios:
            by_metric.update(s.failed)
    else:
        for r in run.scores.rows:
            if r.group == "" and r.category != "ALL" and r.n_failed:
                by_metric[r.metric] += r.n_failed
    unit = "simulations" if run.scenarios is not None else "scenarios"
    order = [run.design.headline[c] for c in run.design.categories if c in run.design.headline]
    rows = sorted(by_metric.items(), key=lambda kv: (kv[0] not in order, order.index(kv[0]) if kv[0] in order else 0, kv[0]))
    unscored = Counter(s.unscored for s in run.scenarios or [] if s.unscored)
    return {"judges": dict(run.scores.failures), "by_metric": rows, "unit": unit,
            "total": sum(run.scores.failures.values()), "unscored": sorted(unscored.items())}


def _figure_entry(f: FigureResult, paths: dict[str, Path], root: Path) -> dict[str, Any]:
    p = paths.get(f.name)
    return {"name": f.name, "title": f.title, "note": f.note,
            "path": str(p.relative_to(root)) if p else None,
            "b64": base64.b64encode(p.read_bytes()).decode("ascii") if p else None}


def _table_entry(t: Table) -> dict[str, Any]:
    return {"name": t.name, "title": t.title, "html": t.to_html(), "markdown": t.to_markdown(),
            "files": [f"tables/{t.name}.{ext}" for ext in ("md", "tex", "csv")]}


def _code_spans(text: str) -> markupsafe.Markup:
    """Markdown's `code` spans as HTML <code>, the rest escaped (a plan's notes are Markdown)."""
    parts = str(text).split("`")
    return markupsafe.Markup("").join(markupsafe.Markup("<code>%s</code>") % p if i % 2 else markupsafe.escape(p)
                                      for i, p in enumerate(parts))


def _env(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=autoescape,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True)
    env.filters["code_spans"] = _code_spans
    return env


def build_context(run: RunData, tables: list[Table], figures: list[FigureResult], fig_paths: dict[str, Path],
                  glossary_note: str = "") -> dict[str, Any]:
    comps = next((t for t in tables if t.name == "comparisons"), None)
    notes = list(run.scores.notes) + list(run.notes) + [f"{f.title}: {f.note}" for f in figures if f.note]
    return {
        "title": run.design.title,
        "run_id": run.run_id,
        "run_path": str(run.path),
        "generated": _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "localbench_version": __version__,
        "scores_version": run.scores.version,
        "summary": spec_summary(run),
        "provenance": provenance(run),
        "tables": [_table_entry(t) for t in tables if t is not comps],
        "comparisons": _table_entry(comps) if comps else None,
        "figures": [_figure_entry(f, fig_paths, run.path) for f in figures],
        "n_comparisons": len(run.scores.comparisons),
        "n_significant": len(comps.bold_rows) if comps else 0,
        "failures": failure_summary(run),
        "notes": notes,
        "glossary": [(m.name, m.description) for m in run.design.metrics if m.glossary and m.description],
        "glossary_note": glossary_note,
    }


def build_tables(run: RunData, fmt: CellFormat = "pm") -> list[Table]:
    """Every table of the report in order: the benchmark's own, then the paired comparisons."""
    tables = [t for build in run.design.report_plan().tables for t in build(run, fmt)]
    comps = comparisons_table(run)
    return tables + ([comps] if comps is not None else [])


def build_figures(run: RunData) -> list[FigureResult]:
    """Every figure of the report, in the order the benchmark's report plan lists them."""
    return [build(run) for build in run.design.report_plan().figures]


def build_report(run_dir: str | Path, fmt: CellFormat = "pm", design: Design | None = None) -> Report:
    """Write every table, figure and both reports into the run directory; say what was written."""
    run = load_run(run_dir, design)
    tables = build_tables(run, fmt)
    table_paths = write_tables(tables, run.path / "tables")
    figures = build_figures(run)
    fig_paths = write_figures(figures, run.path / "figures")
    ctx = build_context(run, tables, figures, fig_paths, run.design.report_plan().glossary_note)
    html_path, md_path = run.path / "report.html", run.path / "report.md"
    write_atomic(html_path, _env(True).get_template("report.html.j2").render(**ctx))
    write_atomic(md_path, _env(False).get_template("report.md.j2").render(**ctx))
    return Report(html_path, md_path, table_paths, fig_paths, ctx["notes"])


def render_report(run_dir: str | Path, fmt: CellFormat = "pm", design: Design | None = None) -> Path:
    """Write the whole report into the run directory; returns the path of report.html."""
    return build_report(run_dir, fmt, design).html
