"""The report's figures (matplotlib, Agg canvas), each built from a loaded run and written as PNG
(what the report embeds) and as SVG and PDF beside it (vector figures, for a paper).

Shared figure kinds a benchmark's report picks and parametrises with its own metrics: a metric
against the conditions (one panel per category), a heatmap of a metric over a category's groups
("source→target"), a trade-off of two pooled quantities across conditions, and stacked full/partial
bars. Every builder returns a FigureResult: the figure, or None and a note saying why it was
skipped (missing data is reported, never a crash). Figures are created without pyplot so that
building them never touches a GUI backend or global state.
"""

from __future__ import annotations

import io
import math
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from localbench.design import ALL
from localbench.report.aggregate import Estimate
from localbench.report.data import RunData
from localbench.runlog import RunFiles

DPI = 130

SAVE_OPTIONS: dict[str, dict] = {
    "png": {"dpi": DPI},
    "svg": {"metadata": {"Date": None}},
    "pdf": {"metadata": {"CreationDate": None}},
}
"""Every format a figure is written in, with what makes its bytes depend on the figure alone (no
creation date): PNG, which the report embeds, and the vector formats a paper takes."""
_PAIR_SPLIT = re.compile(r"\s*(?:→|->)\s*")


@dataclass
class FigureResult:
    name: str  # file stem under figures/
    title: str
    figure: Figure | None
    note: str | None = None  # why it was skipped, or a caveat
    caption: str = ""  # one line: what to look at
    alt: str = ""  # what the picture shows, for a reader who cannot see it (default: the title)

    @property
    def ok(self) -> bool:
        return self.figure is not None


def new_figure(w: float, h: float) -> Figure:
    fig = Figure(figsize=(w, h), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def title_width(text: str, fontsize: float) -> float:
    """Inches a one-line title needs at ``fontsize`` (with margins): a figure at least this wide
    never cuts its title."""
    return 0.62 * fontsize / 72 * len(text) + 0.6


def colors(run: RunData) -> dict[str, tuple]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {m: cmap(i % 10) for i, m in enumerate(run.models())}


def yerr(ests: list[Estimate]) -> np.ndarray:
    lo = [e.mean - e.low if e.mean is not None and e.has_ci else 0.0 for e in ests]
    hi = [e.high - e.mean if e.mean is not None and e.has_ci else 0.0 for e in ests]
    return np.array([lo, hi]).clip(min=0)


def one_judge(run: RunData) -> tuple[str | None, str | None]:
    """Figures show one judge: with several in the run, the first, and a note saying so."""
    judges = run.judges()
    if len(judges) <= 1:
        return None, None
    return judges[0], f"judge {judges[0]} only (the tables show every judge)"


def join_notes(*notes: str | None) -> str | None:
    return "; ".join(n for n in notes if n) or None


def heat_cells(ax: Any, cells: np.ndarray) -> Any:
    """A heatmap of ``cells`` (0 to 1, rows top to bottom, NaN left to the axes' grey) drawn as vector
    quads, where ``imshow`` would put a bitmap into the SVG and PDF; cell (a, b) is centred on
    (b, a), as ``imshow`` places it, so labels and values sit where they did."""
    rows, cols = cells.shape
    mesh = ax.pcolormesh(np.arange(cols + 1) - 0.5, np.arange(rows + 1) - 0.5, np.ma.masked_invalid(cells),
                         cmap="Reds", vmin=0, vmax=1)
    ax.set_xlim(-0.5, cols - 0.5)
    ax.set_ylim(rows - 0.5, -0.5)
    return mesh


def heat_colorbar(fig: Figure, mesh: Any, axes: Any, label: str | None = None) -> None:
    """The heatmaps' colour scale, kept vector too (matplotlib rasterizes a colorbar of many colours)."""
    bar = fig.colorbar(mesh, ax=axes, shrink=0.8, label=label)
    bar.solids.set_rasterized(False)


def grid(n: int, max_cols: int = 4) -> tuple[int, int]:
    cols = min(max_cols, n)
    return math.ceil(n / cols), cols


def metric_by_condition(run: RunData, name: str, title: str, panels: list[tuple[str, str]]) -> FigureResult:
    """A metric against the conditions, one panel per (category, metric), one line per model."""
    conditions = run.conditions()
    panels = [(c, m) for c, m in panels
              if any(r.metric == m and r.category == c and r.mean is not None for r in run.scores.rows)]
    if not panels or not conditions:
        return FigureResult(name, title, None, f"skipped: no such metric has a value in {RunFiles.SCORES}")
    nr, nc = grid(len(panels))
    fig = new_figure(3.4 * nc, 2.9 * nr + 0.5)
    axes = fig.subplots(nr, nc, squeeze=False).ravel()
    palette = colors(run)
    models = run.models()
    x = np.arange(len(conditions))
    width = 0.25 / max(1, len(models))
    judge, jnote = one_judge(run)
    for ax, (cat, metric) in zip(axes, panels):
        for k, m in enumerate(models):
            ests = [Estimate.from_row(run.row(metric, m, lv, cat, judge)) for lv in conditions]
            y = np.array([np.nan if e.mean is None else e.mean for e in ests])
            if np.all(np.isnan(y)):
                continue
            ax.errorbar(x + (k - (len(models) - 1) / 2) * width, y, yerr=yerr(ests), marker="o", ms=4,
                        capsize=3, lw=1.4, color=palette[m], label=m)
        better = "higher" if run.design.higher_is_better(metric) else "lower"
        ax.set_title(f"{cat}: {metric} ({better} is better)" if cat != ALL else f"{metric} ({better} is better)",
                     fontsize=9)
        ax.set_xticks(x, conditions)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    handles = [Patch(color=palette[m], label=m) for m in models]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(4, len(models)), fontsize=8)
    fig.suptitle(f"{title} (error bars: 95% CI)", fontsize=11)
    return FigureResult(name, title, fig, jnote)


def _split_pair(pair: str) -> tuple[str, str] | None:
    parts = _PAIR_SPLIT.split(pair.strip())
    return (parts[0], parts[1]) if len(parts) == 2 and all(parts) else None


def group_heatmap(run: RunData, name: str, title: str, metric: str, category: str,
                  axis_names: tuple[str, str] = ("source", "target")) -> FigureResult:
    """``metric`` of ``category``'s simulations by group ("a→b": a row, b a column), one panel
    per model and condition (scenario_scores.jsonl)."""
    if run.scenarios is None:
        return FigureResult(name, title, None, "skipped: scenario_scores.jsonl is absent")
    # (model, condition, source, target) -> scenario -> seed values
    vals: dict[tuple[str, str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    judge, jnote = one_judge(run)
    for s in run.scenarios:
        if s.category != category or not s.group or (judge is not None and s.judge != judge):
            continue
        st = _split_pair(s.group)
        v = s.metrics.get(metric)
        if st is None or v is None or not math.isfinite(v):
            continue
        vals[(s.model, s.condition, *st)][s.scenario].append(v)
    if not vals:
        return FigureResult(name, title, None, f"skipped: no {category} scenario has a {metric} value and a group")
    models = [m for m in run.models() if any(k[0] == m for k in vals)]
    conditions = [lv for lv in run.conditions() if any(k[1] == lv for k in vals)]
    sources = sorted({k[2] for k in vals})
    targets = sorted({k[3] for k in vals})
    suptitle = title + " (grey: no scenario)"
    fig = new_figure(max(1.8 + 0.55 * len(targets) * len(conditions), title_width(suptitle, 10)),
                     max(2.4, 1.4 + 0.5 * len(sources) * len(models)))
    axes = fig.subplots(len(models), len(conditions), squeeze=False)
    im = None
    for i, m in enumerate(models):
        for j, lv in enumerate(conditions):
            ax = axes[i][j]
            cells = np.full((len(sources), len(targets)), np.nan)
            for a, src in enumerate(sources):
                for b, tgt in enumerate(targets):
                    per = vals.get((m, lv, src, tgt))
                    if per:
                        cells[a, b] = float(np.mean([np.mean(x) for x in per.values()]))
            im = heat_cells(ax, cells)
            for a in range(len(sources)):
                for b in range(len(targets)):
                    if not np.isnan(cells[a, b]):
                        ax.text(b, a, f"{cells[a, b]:.2f}", ha="center", va="center", fontsize=6,
                                color="white" if cells[a, b] > 0.6 else "black")
            ax.set_xticks(range(len(targets)), targets, rotation=45, ha="right", fontsize=7)
            ax.set_yticks(range(len(sources)), sources, fontsize=7)
            ax.set_facecolor("#eeeeee")
            ax.set_title(f"{m} · {lv}", fontsize=8)
            if i == len(models) - 1:
                ax.set_xlabel(axis_names[1], fontsize=7)
            if j == 0:
                ax.set_ylabel(axis_names[0], fontsize=7)
    if im is not None:
        heat_colorbar(fig, im, axes, label=metric)
    fig.suptitle(suptitle, fontsize=10)
    return FigureResult(name, title, fig, jnote)


YValue = Callable[[str, str, "str | None"], Estimate]
"""(model, condition, judge) -> the y value of a trade-off point."""


def tradeoff(run: RunData, name: str, title: str, x_metric: str, y: YValue, y_label: str) -> FigureResult:
    """``x_metric`` (pooled over every category) against ``y``, one trajectory per model over conditions."""
    conditions = run.conditions()
    palette = colors(run)
    points: dict[str, list[tuple[str, Estimate, Estimate]]] = {}
    judge, jnote = one_judge(run)
    for m in run.models():
        for lv in conditions:
            xv = Estimate.from_row(run.row(x_metric, m, lv, ALL, judge))
            yv = y(m, lv, judge)
            if xv.mean is not None and yv.mean is not None:
                points.setdefault(m, []).append((lv, xv, yv))
    if not points:
        return FigureResult(name, title, None, f"skipped: no model has both a {x_metric} value and a y value")
    fig = new_figure(6.0, 4.6)
    ax = fig.subplots()
    for m, pts in points.items():
        xs = [p[1].mean for p in pts]
        ys = [p[2].mean for p in pts]
        ax.errorbar(xs, ys, xerr=yerr([p[1] for p in pts]), yerr=yerr([p[2] for p in pts]), marker="o",
                    ms=5, capsize=3, lw=1.2, color=palette[m], label=m)
        for lv, xx, yy in zip((p[0] for p in pts), xs, ys):
            ax.annotate(lv, (xx, yy), textcoords="offset points", xytext=(5, 4), fontsize=7, color=palette[m])
    better = "higher" if run.design.higher_is_better(x_metric) else "lower"
    ax.set_xlabel(f"{x_metric} ({better} is better)")
    ax.set_ylabel(y_label)
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title + " (95% CIs; lines join a model's conditions)", fontsize=10)
    return FigureResult(name, title, fig, jnote)


def split_bars(run: RunData, name: str, title: str, panels: list[tuple[str, str]],
               parts: tuple[str, str] = ("_full", "_partial")) -> FigureResult:
    """A metric's two parts stacked per condition (solid: the first, hatched: the second), one bar per
    model, one panel per (category, metric)."""
    conditions = run.conditions()
    models = run.models()
    panels = [(c, m) for c, m in panels if any(r.metric in (m + parts[0], m + parts[1]) and r.category == c
                                               and r.mean is not None for r in run.scores.rows)]
    if not panels:
        return FigureResult(name, title, None, f"skipped: no {parts[0]}/{parts[1]} split in {RunFiles.SCORES}")
    nr, nc = grid(len(panels))
    fig = new_figure(3.6 * nc, 2.9 * nr + 0.6)
    axes = fig.subplots(nr, nc, squeeze=False).ravel()
    palette = colors(run)
    x = np.arange(len(conditions))
    width = 0.8 / max(1, len(models))
    judge, jnote = one_judge(run)
    first, second = (p.strip("_") for p in parts)
    for ax, (cat, metric) in zip(axes, panels):
        for k, m in enumerate(models):
            lo = [run.row(metric + parts[0], m, lv, cat, judge) for lv in conditions]
            hi = [run.row(metric + parts[1], m, lv, cat, judge) for lv in conditions]
            f = np.array([r.mean if r is not None and r.mean is not None else np.nan for r in lo])
            p = np.array([r.mean if r is not None and r.mean is not None else np.nan for r in hi])
            xs = x + (k - (len(models) - 1) / 2) * width
            ax.bar(xs, np.nan_to_num(f), width, color=palette[m], edgecolor="black", lw=0.4)
            ax.bar(xs, np.nan_to_num(p), width, bottom=np.nan_to_num(f), color=palette[m], alpha=0.35,
                   hatch="///", edgecolor="black", lw=0.4)
            for xi, fi, pi in zip(xs, f, p):
                if np.isnan(fi) and np.isnan(pi):
                    ax.text(xi, 0.02, "n/a", rotation=90, ha="center", va="bottom", fontsize=6)
        ax.set_title(f"{cat}: {metric} = {first} + {second}", fontsize=9)
        ax.set_xticks(x, conditions)
        ax.set_ylim(0, 1.02)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[len(panels):]:
        ax.set_visible(False)
    handles = [Patch(color=palette[m], label=m) for m in models]
    handles += [Patch(facecolor="white", edgecolor="black", label=first),
                Patch(facecolor="white", edgecolor="black", hatch="///", label=second)]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(6, len(handles)), fontsize=8)
    fig.suptitle(f"{title} (solid: {first}, hatched: {second})", fontsize=11)
    return FigureResult(name, title, fig, jnote)


def bars_by_condition(run: RunData, name: str, title: str, metrics: list[str], labels: list[str] | None = None,
                  category: str = ALL) -> FigureResult:
    """Several metrics side by side (a group of bars each), one bar per condition, one panel per model;
    error bars are the rows' intervals."""
    conditions = run.conditions()
    labels = labels or metrics
    models = [m for m in run.models() if any(run.row(x, m, lv, category) for x in metrics for lv in conditions)]
    if not models:
        return FigureResult(name, title, None, f"skipped: none of these metrics has a row in {RunFiles.SCORES}")
    fig = new_figure(max(title_width(title, 11), 1.2 + 0.5 * len(metrics) * max(1, len(conditions)) * 0.6),
                     2.9 * len(models) + 0.6)
    axes = fig.subplots(len(models), 1, squeeze=False).ravel()
    from matplotlib import colormaps

    cmap = colormaps["viridis"]
    x = np.arange(len(metrics))
    width = 0.8 / max(1, len(conditions))
    judge, jnote = one_judge(run)
    for ax, model in zip(axes, models):
        for k, lv in enumerate(conditions):
            ests = [Estimate.from_row(run.row(m, model, lv, category, judge)) for m in metrics]
            y = np.array([np.nan if e.mean is None else e.mean for e in ests])
            ax.bar(x + (k - (len(conditions) - 1) / 2) * width, np.nan_to_num(y), width, yerr=yerr(ests), capsize=2,
                   color=cmap(k / max(1, len(conditions) - 1) * 0.85), label=lv, edgecolor="black", lw=0.3)
        ax.set_xticks(x, labels)
        ax.set_ylim(0, 1.02)
        ax.set_title(model, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=8, title=run.design.condition.label, title_fontsize=8, ncols=min(4, len(conditions)))
    fig.suptitle(f"{title} (error bars: 95% interval)", fontsize=11)
    return FigureResult(name, title, fig, jnote)


def metric_matrix(run: RunData, name: str, title: str, metrics: list[str], labels: list[str] | None = None,
                  category: str = ALL) -> FigureResult:
    """A heatmap per condition: models as rows, metrics as columns (their means)."""
    conditions = run.conditions()
    models = run.models()
    labels = labels or metrics
    if not models or not conditions:
        return FigureResult(name, title, None, f"skipped: no rows in {RunFiles.SCORES}")
    judge, jnote = one_judge(run)
    fig = new_figure(max(title_width(title, 10), 1.5 + 0.45 * len(metrics) * len(conditions)),
                     1.4 + 0.45 * len(models))
    axes = fig.subplots(1, len(conditions), squeeze=False).ravel()
    im = None
    for ax, lv in zip(axes, conditions):
        cells = np.array([[np.nan if (r := run.row(m, model, lv, category, judge)) is None or r.mean is None
                           else r.mean for m in metrics] for model in models])
        im = heat_cells(ax, cells)
        for a in range(len(models)):
            for b in range(len(metrics)):
                if not np.isnan(cells[a, b]):
                    ax.text(b, a, f"{cells[a, b]:.2f}", ha="center", va="center", fontsize=6,
                            color="white" if cells[a, b] > 0.6 else "black")
        ax.set_xticks(range(len(metrics)), labels, fontsize=7)
        ax.set_yticks(range(len(models)), models, fontsize=7)
        ax.set_facecolor("#eeeeee")
        ax.set_title(lv, fontsize=8)
    if im is not None:
        heat_colorbar(fig, im, axes)
    fig.suptitle(title + " (grey: no data)", fontsize=10)
    return FigureResult(name, title, fig, jnote)


def figure_bytes(fig: Figure, fmt: str = "png") -> bytes:
    """The figure in one of ``SAVE_OPTIONS``' formats (SVG element ids salted with a constant, so the
    same figure gives the same file)."""
    buf = io.BytesIO()
    with matplotlib.rc_context({"svg.hashsalt": "localbench"}):
        fig.savefig(buf, format=fmt, **SAVE_OPTIONS[fmt])
    return buf.getvalue()


def figure_png(fig: Figure) -> bytes:
    return figure_bytes(fig, "png")


def write_figures(results: list[FigureResult], out_dir: Path) -> dict[str, Path]:
    """Save each built figure as out_dir/<name>.png, .svg and .pdf; returns name -> the PNG's path,
    which the report embeds (skipped figures absent, their files of an earlier render removed)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for r in results:
        for fmt in SAVE_OPTIONS:
            p = out_dir / f"{r.name}.{fmt}"
            if r.figure is None:
                p.unlink(missing_ok=True)  # a stale image from an earlier render would contradict the note
            else:
                p.write_bytes(figure_bytes(r.figure, fmt))
        if r.figure is not None:
            paths[r.name] = out_dir / f"{r.name}.png"
    return paths
