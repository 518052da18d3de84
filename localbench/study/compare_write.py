"""What `localbench compare` writes: every table as Markdown, LaTeX (booktabs) and CSV under tables/,
the figures as PNG, SVG and PDF under figures/, compare.md, and compare.html (self-contained) whose
cells open the simulations behind them in a viewer of every run (view/, `localbench view RUN...`).
"""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from localbench import __version__
from localbench.files import write_atomic
from localbench.report.aggregate import Estimate
from localbench.report.figures import FigureResult, new_figure, write_figures, yerr
from localbench.report.tables import CellFormat, Table, write_tables
from localbench.runlog import RunFiles, RunPaths
from localbench.scores import JudgeWarning
from localbench.study.compare import (Entry, benchmark_tables, headline_estimate, headline_metric, headline_table,
                                      load_entries, merged_conditions)

VIEW = RunFiles.VIEW  # the viewer of every compared run, in OUT


@dataclass
class Comparison:
    """What a compare wrote."""

    out: Path
    html: Path
    markdown: Path
    tables: list[Path] = field(default_factory=list)
    figures: dict[str, Path] = field(default_factory=dict)
    viewer: Path | None = None
    headline_markdown: str = ""


def headline_figure(by_bench: dict[str, list[Entry]]) -> FigureResult:
    """One panel per benchmark: each model's pooled headline at each condition, with its interval."""
    from matplotlib import colormaps

    title = "Headline metric by model"
    if not by_bench:
        return FigureResult("headline", title, None, "skipped: no run")
    labels = list(dict.fromkeys(e.label for es in by_bench.values() for e in es))
    palette = {m: colormaps["tab10"](i % 10) for i, m in enumerate(labels)}
    fig = new_figure(max(4.0, 3.6 * len(by_bench)), 3.6)
    axes = fig.subplots(1, len(by_bench), squeeze=False).ravel()
    for ax, (bench, entries) in zip(axes, by_bench.items()):
        design = entries[0].run.design
        conds = merged_conditions(entries)
        x = np.arange(len(conds))
        width = 0.5 / max(1, len(entries))
        for k, e in enumerate(entries):
            ests = [headline_estimate(e, c) if c in e.run.conditions() else Estimate(None) for c in conds]
            y = np.array([np.nan if v.mean is None else v.mean for v in ests])
            ax.errorbar(x + (k - (len(entries) - 1) / 2) * width, y, yerr=yerr(ests), marker="o", ms=4, capsize=3,
                        lw=0, elinewidth=1.2, color=palette[e.label], label=e.label)
        metric = headline_metric(design)
        better = "higher" if design.higher_is_better(metric) else "lower"
        ax.set_title(f"{design.title}: {metric} ({better} is better)", fontsize=9)
        ax.set_xticks(x, conds, rotation=30 if len(conds) > 3 else 0, fontsize=8)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    handles, names = axes[0].get_legend_handles_labels()
    fig.legend(handles, names, loc="outside lower center", ncols=min(4, len(labels)), fontsize=8)
    fig.suptitle(f"{title} (error bars: 95% interval)", fontsize=11)
    return FigureResult("headline", title, fig, caption="Each benchmark's headline pooled over its categories.")


def ranks_figure(tables: list[Table]) -> FigureResult:
    """Every benchmark's rank intervals (first condition of each ranks table), one panel per benchmark."""
    title = "Rank by headline metric (1 = best)"
    ranked = [t for t in tables if t.name.endswith("_ranks") and any(isinstance(r.cells[0], Estimate)
                                                                     for r in t.rows)]
    if not ranked:
        return FigureResult("ranks", title, None, "skipped: no benchmark has two models on common scenarios")
    fig = new_figure(max(4.0, 3.4 * len(ranked)), 0.8 + 0.35 * max(len(t.rows) for t in ranked) + 1.0)
    axes = fig.subplots(1, len(ranked), squeeze=False).ravel()
    for ax, t in zip(axes, ranked):
        rows = [(r.labels[0], r.cells[0]) for r in t.rows if isinstance(r.cells[0], Estimate)]
        y = np.arange(len(rows))
        ests = [c for _, c in rows]
        ax.errorbar([c.mean for c in ests], y, xerr=yerr(ests), fmt="o", capsize=3, color="black")
        ax.set_yticks(y, [m for m, _ in rows], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlim(0.5, len(rows) + 0.5)
        ax.set_xticks(range(1, len(rows) + 1))
        ax.set_title(f"{t.title.split(':')[0]} · {t.columns[0].header.split(' · ')[-1]}", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    fig.suptitle(f"{title} (bars: 95% bootstrap interval)", fontsize=11)
    return FigureResult("ranks", title, fig)


CSS = """body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1200px;padding:0 1em;color:#222}
table.results{border-collapse:collapse;margin:1em 0;font-size:0.9em}
table.results th,table.results td{border-bottom:1px solid #ddd;padding:0.25em 0.6em;text-align:right}
table.results th[scope=row],table.results thead th{text-align:left}
table.results caption{text-align:left;font-weight:bold;padding:0.3em 0}
tr.break{border-top:2px solid #999} a.cell{color:inherit;text-decoration:none;border-bottom:1px dotted #888}
p.note{font-size:0.85em;color:#555;margin:0.2em 0} figure img{max-width:100%}"""


def _html(title: str, tables: list[Table], figures: list[FigureResult], paths: dict[str, Path], out: Path,
          viewer: str | None, runs: list[Path]) -> str:
    e = html.escape
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{e(title)}</title><style>{CSS}</style>"
             f"</head><body><h1>{e(title)}</h1>",
             f"<p>localbench {e(__version__)}; runs: {e(', '.join(str(r) for r in runs))}.</p>"]
    if viewer:
        parts.append(f"<p>Each number links to the simulations behind it in <a href='{e(viewer)}'>the viewer</a> "
                     "of every run (<code>localbench view RUN...</code>).</p>")
    for t in tables:
        parts.append(t.to_html(viewer))
    for f in figures:
        p = paths.get(f.name)
        if p is None:
            parts.append(f"<p class='note'>{e(f.title)}: {e(f.note or 'skipped')}</p>")
            continue
        b64 = base64.b64encode(p.read_bytes()).decode("ascii")
        rel = p.relative_to(out).with_suffix("")
        parts.append(f"<figure><img alt='{e(f.alt or f.title)}' src='data:image/png;base64,{b64}'><figcaption>"
                     f"{e(f.title)} ({' · '.join(f'<a href={chr(39)}{e(str(rel))}.{x}{chr(39)}>{x}</a>' for x in ('svg', 'pdf', 'png'))})"
                     f"</figcaption></figure>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _markdown(title: str, tables: list[Table], paths: dict[str, Path], out: Path) -> str:
    lines = [f"# {title}", ""]
    for t in tables:
        lines += [t.to_markdown(), ""]
    for name, p in paths.items():
        rel = p.relative_to(out)
        lines += [f"![{name}]({rel}) ([svg]({rel.with_suffix('.svg')}), [pdf]({rel.with_suffix('.pdf')}))", ""]
    return "\n".join(lines)


def write_comparison(run_dirs: list[Path], out: Path, fmt: CellFormat = "pm", view: bool = True,
                     judge_warnings: list[JudgeWarning] | None = None) -> Comparison:
    """Compare these runs and write every table, figure and page into ``out``."""
    by_bench = load_entries(run_dirs, judge_warnings)
    tables: list[Table] = [headline_table(by_bench, fmt)]
    for entries in by_bench.values():
        tables += benchmark_tables(entries, fmt)[1]
    out.mkdir(parents=True, exist_ok=True)
    table_paths = write_tables(tables, out / RunFiles.TABLES)
    figures = [headline_figure(by_bench), ranks_figure(tables)]
    fig_paths = write_figures(figures, out / RunFiles.FIGURES)
    dirs = list(dict.fromkeys(e.run.path for es in by_bench.values() for e in es))
    viewer_page = None
    if view and all(RunPaths(d).transcripts_path.is_file() for d in dirs):
        from localbench.viewer.build import write_viewer

        viewer_page = write_viewer(dirs, out / VIEW).index
    viewer = viewer_page.relative_to(out).as_posix() if viewer_page else None
    title = "Comparison of " + ", ".join(es[0].run.design.title for es in by_bench.values())
    html_path, md_path = out / "compare.html", out / "compare.md"
    write_atomic(html_path, _html(title, tables, figures, fig_paths, out, viewer, dirs))
    write_atomic(md_path, _markdown(title, tables, fig_paths, out))
    return Comparison(out, html_path, md_path, table_paths, fig_paths, viewer_page, tables[0].to_markdown())
