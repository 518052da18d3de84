"""Render a run's report: tables/ (md, tex, csv), figures/ (png, svg, pdf), report.html and report.md.

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
from localbench.report.plan import ReportPlan
from localbench.report.data import RunData, load_run
from localbench.report.figures import FigureResult, write_figures
from localbench.report.provenance import key_facts, sections
from localbench.report.tables import DEGENERATE, CellFormat, Table, comparisons_table, md_text, write_tables
from localbench.runlog import RunFiles, RunPaths
from localbench.report.trust import trust_context
from localbench.scores import SELF_JUDGING, UNMEASURED, JudgeWarning

TEMPLATES = Path(__file__).parent / "templates"
VIEWER = RunFiles.VIEWER  # the run's viewer (written beside the report: `localbench view`, the report command)


@dataclass
class ExtraSection:
    """A section a command adds to the report on request (``localbench report --cross-check``): a
    title, an introduction in Markdown and its tables (templates/extra_sections.*.j2)."""

    anchor: str
    title: str
    intro: str
    tables: list[Table] = field(default_factory=list)


@dataclass
class Report:
    """What a render wrote."""

    html: Path
    markdown: Path
    tables: list[Path] = field(default_factory=list)
    figures: dict[str, Path] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def missing_line(run: RunData) -> str | None:
    """The spec's simulations that have no transcript, per category (scores.json), or None."""
    missing = run.scores.missing_simulations
    if not missing:
        return None
    n = sum(missing.values())
    per = ", ".join(f"{c} {k}" for c, k in missing.items())
    planned = run.scores.planned_simulations
    return (f"{n} of the {planned} simulations the spec lists have no transcript ({per}): every number below "
            "covers the others only.")


def spec_summary(run: RunData) -> list[tuple[str, str]]:
    """The facts a reader needs first: what was run, on which models, how many times."""
    s = run.spec
    rows: list[tuple[str, str]] = [("benchmark", run.scores.benchmark)]
    rows.append(("agent models", ", ".join(run.models()) or "—"))
    rows.append(("judges", ", ".join(run.judges()) or "—"))
    if isinstance(s.get("models"), dict):
        rows += [(f"spec models.{k}", str(v)) for k, v in s["models"].items() if v]
    rows.append((run.design.condition.label.lower() + "s", ", ".join(run.conditions()) or "—"))
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


def what_ran(run: RunData) -> str:
    """One line: benchmark, models, conditions, scenarios, simulations and failures."""
    d = run.design
    judges = ", ".join(run.judges()) or "no judge yet"
    parts = [f"{d.title}: {', '.join(run.models()) or 'no model'} judged by {judges}",
             f"{d.condition.label.lower()} {', '.join(run.conditions()) or '—'}"]
    if run.scenarios is not None:
        scen = {(x.category, x.scenario) for x in run.scenarios}
        n_cats = len({c for c, _ in scen})
        label = d.category.label.lower()
        plural = label[:-1] + "ies" if label.endswith("y") else label + "s"
        parts.append(f"{len(scen)} scenarios across {n_cats} {label if n_cats == 1 else plural}")
        parts.append(f"{len(run.scenarios)} simulations")
    failed = sum(run.scores.failures.values())
    unscored = sum(1 for x in run.scenarios or [] if x.unscored)
    parts.append(f"{failed} failed judge calls, {unscored} simulations without a leakage score"
                 if failed or unscored else "no failed judge call")
    return "; ".join(parts) + "."


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
    return {"name": f.name, "title": f.title, "note": f.note, "caption": f.caption, "alt": f.alt or f.title,
            "path": str(p.relative_to(root)) if p else None,
            "b64": base64.b64encode(p.read_bytes()).decode("ascii") if p else None}


def _table_entry(t: Table, viewer: str | None) -> dict[str, Any]:
    return {"name": t.name, "title": t.title, "html": t.to_html(viewer), "markdown": Rendered(t.to_markdown()),
            "files": [f"{RunFiles.TABLES}/{t.name}.{ext}" for ext in ("md", "tex", "csv")]}


def _code_spans(text: str) -> markupsafe.Markup:
    """Markdown's `code` spans as HTML <code>, the rest escaped (a plan's notes are Markdown)."""
    parts = str(text).split("`")
    return markupsafe.Markup("").join(markupsafe.Markup("<code>%s</code>") % p if i % 2 else markupsafe.escape(p)
                                      for i, p in enumerate(parts))


class Rendered(str):
    """Markdown a table already escaped (report.md prints it as it is)."""


def _md_finalize(value: Any) -> Any:
    """report.md: every value is untrusted text (model names, scenario ids, notes), so markup in it
    is escaped, as report.html's autoescape does; tables rendered by Table.to_markdown pass."""
    return value if isinstance(value, Rendered) or not isinstance(value, str) else md_text(value)


def _env(autoescape: bool) -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=autoescape,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             keep_trailing_newline=True, finalize=None if autoescape else _md_finalize)
    env.filters["code_spans"] = _code_spans
    return env


def build_context(run: RunData, tables: list[Table], figures: list[FigureResult], fig_paths: dict[str, Path],
                  plan: ReportPlan | None = None, lead: Table | None = None) -> dict[str, Any]:
    plan = plan or ReportPlan()
    comps = next((t for t in tables if t.name == "comparisons"), None)
    notes = list(run.scores.notes) + list(run.notes) + [f"{f.title}: {f.note}" for f in figures if f.note]
    # the report and run commands write the viewer beside the report of any run with transcripts
    paths = RunPaths(run.path)
    viewer = VIEWER if paths.viewer_page.exists() or paths.transcripts_path.exists() else None
    first = next((f for f in figures if f.name == plan.lead_figure and f.ok), None)
    return {
        "title": run.design.title,
        "run_id": run.run_id,
        "run_path": str(run.path),
        "generated": _dt.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
        "localbench_version": __version__,
        "scores_version": run.scores.version,
        "what_ran": what_ran(run),
        "judge_warnings": [w.message for w in run.scores.judge_warnings if w.pattern != UNMEASURED],
        "trust": trust_context(run),
        "missing": missing_line(run),
        "viewer": viewer,
        "lead": _table_entry(lead, viewer) if lead is not None else None,
        "lead_figure": _figure_entry(first, fig_paths, run.path) if first else None,
        "summary": spec_summary(run),
        "key_facts": key_facts(run),
        "provenance": sections(run),
        "tables": [_table_entry(t, viewer) for t in tables if t is not comps],
        "comparisons": _table_entry(comps, viewer) if comps else None,
        "figures": [_figure_entry(f, fig_paths, run.path) for f in figures if f is not first],
        "n_comparisons": len(run.scores.comparisons),
        "n_significant": len(comps.bold_rows) if comps else 0,
        "failures": failure_summary(run),
        "notes": notes,
        "glossary": [(m.name, m.description) for m in run.design.metrics if m.glossary and m.description],
        "glossary_note": plan.glossary_note,
    }


def flagged_metrics(run: RunData) -> dict[str, dict[str, str]]:
    """Metric -> {the judge (and model) it was computed from: why that judge is flagged} (``Table.flagged``):
    a self-judging run's judge (its model), a judge whose answers looked degenerate, or one no gold
    eval measured (``scores.UNMEASURED``)."""
    out: dict[str, dict[str, str]] = {}
    for w in run.scores.judge_warnings:
        own = w.pattern == SELF_JUDGING
        who, why = (w.judge_model, SELF_JUDGING) if own else (f"{w.judge} judge ({w.judge_model})", DEGENERATE)
        if w.pattern == UNMEASURED:  # keyed apart from the same judge's other warnings (one reason per key)
            who, why = f"{w.judge} ({w.judge_model})", UNMEASURED
        for m in w.metrics:
            out.setdefault(m, {})[who] = why
    return out


def build_tables(run: RunData, fmt: CellFormat = "pm") -> list[Table]:
    """Every table of the report in order: the benchmark's own, then the paired comparisons. Cells
    computed from a judge the score stage warned about are marked."""
    tables = [t for build in run.report_plan().tables for t in build(run, fmt)]
    comps = comparisons_table(run)
    flagged = flagged_metrics(run)
    for t in tables:
        t.flagged = flagged
    return tables + ([comps] if comps is not None else [])


def build_figures(run: RunData) -> list[FigureResult]:
    """Every figure of the report, in the order the benchmark's report plan lists them."""
    return [build(run) for build in run.report_plan().figures]


def build_report(run_dir: str | Path, fmt: CellFormat = "pm", design: Design | None = None,
                 judge_warnings: list[JudgeWarning] | None = None,
                 extra_sections: list[ExtraSection] | None = None) -> Report:
    """Write every table, figure and both reports into the run directory; say what was written.
    ``judge_warnings``: more to show beside scores.json's (`localbench report --judge-eval`)."""
    run = load_run(run_dir, design)
    seen = {w.message for w in run.scores.judge_warnings}
    run.scores.judge_warnings += [w for w in judge_warnings or [] if w.message not in seen]
    plan = run.report_plan()
    tables = build_tables(run, fmt)
    lead = plan.lead(run, fmt) if plan.lead is not None else None
    if lead is not None:
        lead.flagged = flagged_metrics(run)
    table_paths = write_tables(tables + ([lead] if lead is not None else []), RunPaths(run.path).tables_dir)
    figures = build_figures(run)
    fig_paths = write_figures(figures, RunPaths(run.path).figures_dir)
    ctx = build_context(run, tables, figures, fig_paths, plan, lead)
    extra = list(extra_sections or [])
    ctx["extra_sections"] = [{"anchor": x.anchor, "title": x.title, "intro": Rendered(x.intro),
                              "tables": [_table_entry(t, ctx["viewer"]) for t in x.tables]} for x in extra]
    table_paths += write_tables([t for x in extra for t in x.tables], RunPaths(run.path).tables_dir)
    html_path, md_path = RunPaths(run.path).report_html, RunPaths(run.path).report_md
    write_atomic(html_path, _env(True).get_template("report.html.j2").render(**ctx))
    write_atomic(md_path, _env(False).get_template("report.md.j2").render(**ctx))
    return Report(html_path, md_path, table_paths, fig_paths, ctx["notes"])


def self_judging_lines(run_dir: str | Path) -> list[str]:
    """The score stage's self-judging warning (``judging.sanity``), for ``localbench run``'s closing lines."""
    scores = RunPaths(run_dir).scores_path
    if not scores.exists():
        return []
    from localbench.scores import Scores

    return [w.message for w in Scores.read(scores).judge_warnings if w.pattern == SELF_JUDGING]


def lead_markdown(run_dir: str | Path) -> str | None:
    """The report's lead table (the benchmark's headline results) as Markdown, for the terminal."""
    run = load_run(run_dir)
    lead = run.report_plan().lead
    if lead is None:
        return None
    t = lead(run, "pm")
    t.flagged = flagged_metrics(run)
    return t.to_markdown()


def render_report(run_dir: str | Path, fmt: CellFormat = "pm", design: Design | None = None,
                  judge_warnings: list[JudgeWarning] | None = None,
                  extra_sections: list[ExtraSection] | None = None) -> Path:
    """Write the whole report into the run directory; returns the path of report.html."""
    return build_report(run_dir, fmt, design, judge_warnings, extra_sections).html
