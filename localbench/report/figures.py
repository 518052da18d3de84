"""The report's figures (matplotlib, Agg canvas, PNG), each built from a loaded run.

Every builder returns a FigureResult: the figure, or None and a note saying why it was skipped
(missing data is reported, never a crash). Figures are created without pyplot so that building
them never touches a GUI backend or global state.
"""

from __future__ import annotations

import io
import math
import re
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.patches import Patch

from localbench.report.aggregate import Estimate, pooled_leak
from localbench.report.data import RunData
from localbench.report.metrics import CATEGORIES, HEADLINE, higher_is_better

DPI = 130
_PAIR_SPLIT = re.compile(r"\s*(?:→|->)\s*")


@dataclass
class FigureResult:
    name: str  # file stem under figures/
    title: str
    figure: Figure | None
    note: str | None = None  # why it was skipped, or a caveat

    @property
    def ok(self) -> bool:
        return self.figure is not None


def _new_figure(w: float, h: float) -> Figure:
    fig = Figure(figsize=(w, h), dpi=DPI, layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _colors(run: RunData) -> dict[str, tuple]:
    from matplotlib import colormaps

    cmap = colormaps["tab10"]
    return {m: cmap(i % 10) for i, m in enumerate(run.models())}


def _yerr(ests: list[Estimate]) -> np.ndarray:
    lo = [e.mean - e.low if e.mean is not None and e.has_ci else 0.0 for e in ests]
    hi = [e.high - e.mean if e.mean is not None and e.has_ci else 0.0 for e in ests]
    return np.array([lo, hi]).clip(min=0)


def _judge(run: RunData) -> tuple[str | None, str | None]:
    """Figures show one judge: with several in the run, the first, and a note saying so."""
    judges = run.judges()
    if len(judges) <= 1:
        return None, None
    return judges[0], f"judge {judges[0]} only (the tables show every judge)"


def _join(*notes: str | None) -> str | None:
    return "; ".join(n for n in notes if n) or None


def _grid(n: int, max_cols: int = 4) -> tuple[int, int]:
    cols = min(max_cols, n)
    return math.ceil(n / cols), cols


def level_effect(run: RunData) -> FigureResult:
    """Headline leakage metric of each category against the privacy level, one line per model."""
    name, title = "level_effect", "Headline metric by privacy level"
    levels = run.levels()
    cats = [c for c in CATEGORIES if any(r.metric == HEADLINE[c] and r.category == c and r.mean is not None
                                         for r in run.scores.rows)]
    if not cats or not levels:
        return FigureResult(name, title, None, "skipped: no headline metric has a value in scores.json")
    nr, nc = _grid(len(cats))
    fig = _new_figure(3.4 * nc, 2.9 * nr + 0.5)
    axes = fig.subplots(nr, nc, squeeze=False).ravel()
    colors = _colors(run)
    models = run.models()
    x = np.arange(len(levels))
    width = 0.25 / max(1, len(models))
    judge, jnote = _judge(run)
    for ax, cat in zip(axes, cats):
        metric = HEADLINE[cat]
        for k, m in enumerate(models):
            ests = [Estimate.from_row(run.row(metric, m, lv, cat, judge)) for lv in levels]
            y = np.array([np.nan if e.mean is None else e.mean for e in ests])
            if np.all(np.isnan(y)):
                continue
            ax.errorbar(x + (k - (len(models) - 1) / 2) * width, y, yerr=_yerr(ests), marker="o", ms=4,
                        capsize=3, lw=1.4, color=colors[m], label=m)
        ax.set_title(f"{cat}: {metric} ({'higher' if higher_is_better(metric) else 'lower'} is better)", fontsize=9)
        ax.set_xticks(x, levels)
        ax.set_ylim(-0.02, 1.02)
        ax.grid(alpha=0.3)
    for ax in axes[len(cats):]:
        ax.set_visible(False)
    handles = [Patch(color=colors[m], label=m) for m in models]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(4, len(models)), fontsize=8)
    fig.suptitle(f"{title} (error bars: 95% CI)", fontsize=11)
    return FigureResult(name, title, fig, jnote)


def _split_pair(pair: str) -> tuple[str, str] | None:
    parts = _PAIR_SPLIT.split(pair.strip())
    return (parts[0], parts[1]) if len(parts) == 2 and all(parts) else None


def domain_heatmap(run: RunData) -> FigureResult:
    """CDLR by source × target domain (CD scenarios), one panel per model and level."""
    name, title = "cd_domain_heatmap", "CD leakage by source → target domain"
    if run.scenarios is None:
        return FigureResult(name, title, None, "skipped: scenario_scores.jsonl is absent")
    # (model, level, source, target) -> scenario -> seed values
    vals: dict[tuple[str, str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    judge, jnote = _judge(run)
    for s in run.scenarios:
        if s.category != "CD" or not s.domain_pair or (judge is not None and s.judge != judge):
            continue
        st = _split_pair(s.domain_pair)
        v = s.metrics.get("CDLR")
        if st is None or v is None or not math.isfinite(v):
            continue
        vals[(s.model, s.level, *st)][s.scenario].append(v)
    if not vals:
        return FigureResult(name, title, None, "skipped: no CD scenario has a CDLR value and a domain pair")
    models = [m for m in run.models() if any(k[0] == m for k in vals)]
    levels = [lv for lv in run.levels() if any(k[1] == lv for k in vals)]
    sources = sorted({k[2] for k in vals})
    targets = sorted({k[3] for k in vals})
    fig = _new_figure(1.0 + 0.55 * len(targets) * len(levels) + 0.8, 0.9 + 0.5 * len(sources) * len(models))
    axes = fig.subplots(len(models), len(levels), squeeze=False)
    im = None
    for i, m in enumerate(models):
        for j, lv in enumerate(levels):
            ax = axes[i][j]
            grid = np.full((len(sources), len(targets)), np.nan)
            for a, src in enumerate(sources):
                for b, tgt in enumerate(targets):
                    per = vals.get((m, lv, src, tgt))
                    if per:
                        grid[a, b] = float(np.mean([np.mean(x) for x in per.values()]))
            im = ax.imshow(np.ma.masked_invalid(grid), cmap="Reds", vmin=0, vmax=1, aspect="auto")
            for a in range(len(sources)):
                for b in range(len(targets)):
                    if not np.isnan(grid[a, b]):
                        ax.text(b, a, f"{grid[a, b]:.2f}", ha="center", va="center", fontsize=6,
                                color="white" if grid[a, b] > 0.6 else "black")
            ax.set_xticks(range(len(targets)), targets, rotation=45, ha="right", fontsize=7)
            ax.set_yticks(range(len(sources)), sources, fontsize=7)
            ax.set_facecolor("#eeeeee")
            ax.set_title(f"{m} · {lv}", fontsize=8)
            if i == len(models) - 1:
                ax.set_xlabel("target domain", fontsize=7)
            if j == 0:
                ax.set_ylabel("source domain", fontsize=7)
    if im is not None:
        fig.colorbar(im, ax=axes, shrink=0.8, label="CDLR")
    fig.suptitle(title + " (grey: no scenario)", fontsize=10)
    return FigureResult(name, title, fig, jnote)


def leak_vs_tcq(run: RunData) -> FigureResult:
    """Privacy–utility trade-off: pooled leak rate against TCQ, one trajectory per model over levels."""
    name, title = "leak_vs_tcq", "Leakage vs task completion quality"
    levels = run.levels()
    cats = [c for c in run.categories() if c in HEADLINE]
    colors = _colors(run)
    points: dict[str, list[tuple[str, Estimate, Estimate]]] = {}
    judge, jnote = _judge(run)
    for m in run.models():
        for lv in levels:
            tcq = Estimate.from_row(run.row("TCQ", m, lv, "ALL", judge))
            leak = pooled_leak(run, m, lv, cats, judge)
            if tcq.mean is not None and leak.mean is not None:
                points.setdefault(m, []).append((lv, tcq, leak))
    if not points:
        return FigureResult(name, title, None, "skipped: no model has both a TCQ value and a leakage value")
    fig = _new_figure(6.0, 4.6)
    ax = fig.subplots()
    for m, pts in points.items():
        xs = [p[1].mean for p in pts]
        ys = [p[2].mean for p in pts]
        ax.errorbar(xs, ys, xerr=_yerr([p[1] for p in pts]), yerr=_yerr([p[2] for p in pts]), marker="o",
                    ms=5, capsize=3, lw=1.2, color=colors[m], label=m)
        for lv, x, y in zip((p[0] for p in pts), xs, ys):
            ax.annotate(lv, (x, y), textcoords="offset points", xytext=(5, 4), fontsize=7, color=colors[m])
    ax.set_xlabel("TCQ (higher is better)")
    ax.set_ylabel("leak rate, all categories pooled (lower is better)")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title + " (95% CIs; lines join a model's levels)", fontsize=10)
    note = None if run.scenarios is not None else "pooled leak has no CI: scenario_scores.jsonl is absent"
    return FigureResult(name, title, fig, _join(note, jnote))


def full_partial_split(run: RunData) -> FigureResult:
    """Full vs partial leaks per level: stacked bars per model, one panel per category."""
    name, title = "full_partial_split", "Full and partial leakage by level"
    levels = run.levels()
    models = run.models()
    cats = [c for c in CATEGORIES if any(r.metric in (f"{HEADLINE[c]}_full", f"{HEADLINE[c]}_partial")
                                         and r.category == c and r.mean is not None for r in run.scores.rows)]
    if not cats:
        return FigureResult(name, title, None, "skipped: no _full/_partial leakage split in scores.json")
    nr, nc = _grid(len(cats))
    fig = _new_figure(3.6 * nc, 2.9 * nr + 0.6)
    axes = fig.subplots(nr, nc, squeeze=False).ravel()
    colors = _colors(run)
    x = np.arange(len(levels))
    width = 0.8 / max(1, len(models))
    judge, jnote = _judge(run)
    for ax, cat in zip(axes, cats):
        metric = HEADLINE[cat]
        for k, m in enumerate(models):
            full = [run.row(f"{metric}_full", m, lv, cat, judge) for lv in levels]
            part = [run.row(f"{metric}_partial", m, lv, cat, judge) for lv in levels]
            f = np.array([r.mean if r is not None and r.mean is not None else np.nan for r in full])
            p = np.array([r.mean if r is not None and r.mean is not None else np.nan for r in part])
            xs = x + (k - (len(models) - 1) / 2) * width
            ax.bar(xs, np.nan_to_num(f), width, color=colors[m], edgecolor="black", lw=0.4)
            ax.bar(xs, np.nan_to_num(p), width, bottom=np.nan_to_num(f), color=colors[m], alpha=0.35,
                   hatch="///", edgecolor="black", lw=0.4)
            for xi, fi, pi in zip(xs, f, p):
                if np.isnan(fi) and np.isnan(pi):
                    ax.text(xi, 0.02, "n/a", rotation=90, ha="center", va="bottom", fontsize=6)
        ax.set_title(f"{cat}: {metric} = full + partial", fontsize=9)
        ax.set_xticks(x, levels)
        ax.set_ylim(0, 1.02)
        ax.grid(axis="y", alpha=0.3)
    for ax in axes[len(cats):]:
        ax.set_visible(False)
    handles = [Patch(color=colors[m], label=m) for m in models]
    handles += [Patch(facecolor="white", edgecolor="black", label="full"),
                Patch(facecolor="white", edgecolor="black", hatch="///", label="partial")]
    fig.legend(handles=handles, loc="outside lower center", ncols=min(6, len(handles)), fontsize=8)
    fig.suptitle(title + " (solid: full, hatched: partial)", fontsize=11)
    note = "AM has no full/partial split (ACS is a compliance score)" if "AM" in run.categories() else None
    return FigureResult(name, title, fig, _join(note, jnote))


BUILDERS = (level_effect, domain_heatmap, leak_vs_tcq, full_partial_split)


def build_figures(run: RunData) -> list[FigureResult]:
    """Every figure of the report, in the order it shows them."""
    return [b(run) for b in BUILDERS]


def figure_png(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def write_figures(results: list[FigureResult], out_dir: Path) -> dict[str, Path]:
    """Save each built figure as out_dir/<name>.png; returns name -> path (skipped ones absent)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {}
    for r in results:
        p = out_dir / f"{r.name}.png"
        if r.figure is None:
            p.unlink(missing_ok=True)  # a stale image from an earlier render would contradict the note
            continue
        p.write_bytes(figure_png(r.figure))
        paths[r.name] = p
    return paths
