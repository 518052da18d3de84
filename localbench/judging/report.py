"""`localbench judges report DIR`: the judge-reliability report (Markdown, HTML, PNGs, verdicts).

Builds one list of sections (text, tables, figures) from a ``Reliability`` and renders it twice,
through localbench/judging/templates/report.{md,html}.j2, so both formats always say the same.
Also writes reliability.json (every number, with its CI) and verdicts.txt (one line per judge).
"""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from localbench.judging.agreement import ConfusionMatrix
from localbench.judging.reliability import (
    BIAS_USE,
    CONSISTENCY_MIN,
    FAIL_MAX,
    FLIP_MAX,
    KAPPA_CORRECT,
    KAPPA_USE,
    Reliability,
    method_name,
)
from localbench.stats import CI

TEMPLATES = Path(__file__).with_name("templates")


@dataclass
class Table:
    headers: list[str]
    rows: list[list[str]]
    caption: str = ""


@dataclass
class Section:
    title: str
    text: list[str] = field(default_factory=list)
    bullets: list[str] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    figures: list[tuple[str, str]] = field(default_factory=list)  # (relative path, caption)


@dataclass
class ReportPaths:
    markdown: Path
    html: Path
    json: Path
    verdicts: Path
    figures: list[Path]


# -- formatting ----------------------------------------------------------------------------------

def ci(c: CI | None, pct: bool = False, signed: bool = False) -> str:
    if c is None or c.estimate is None or math.isnan(c.estimate):
        return "n/a"
    f = (lambda v: f"{100 * v:+.0f}" if signed else f"{100 * v:.0f}") if pct else (lambda v: f"{v:.2f}")
    if c.low is None or math.isnan(c.low):
        return f(c.estimate)
    return f"{f(c.estimate)} [{f(c.low)}, {f(c.high)}]"


def num(v: float | None, pct: bool = False) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "n/a"
    return f"{100 * v:.0f}%" if pct else f"{v:.2f}"


# -- figures -------------------------------------------------------------------------------------

def _matrix_axes(ax, cm: ConfusionMatrix, title: str) -> None:
    m = [list(r) for r in cm.matrix]
    ax.imshow(m, cmap="Blues")
    ax.set_xticks(range(len(cm.labels)), cm.labels)
    ax.set_yticks(range(len(cm.labels)), cm.labels)
    ax.set_xlabel("judge")
    ax.set_ylabel("gold")
    ax.set_title(title, fontsize=9)
    top = max(max(r) for r in m) or 1
    for i, row in enumerate(m):
        for j, v in enumerate(row):
            ax.text(j, i, str(v), ha="center", va="center", color="white" if v > top / 2 else "black")


def confusion_png(judge: str, three: ConfusionMatrix, binary: ConfusionMatrix, path: Path) -> Path:
    fig = Figure(figsize=(7.0, 3.2), dpi=120, layout="constrained")
    FigureCanvasAgg(fig)
    a, b = fig.subplots(1, 2)
    _matrix_axes(a, three, "none / partial / full")
    _matrix_axes(b, binary, "leak decision")
    fig.suptitle(f"{judge} vs gold", fontsize=10)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    return path


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


# -- sections ------------------------------------------------------------------------------------

def sections(rel: Reliability, figures: dict[str, str]) -> list[Section]:
    out = []
    counts = ", ".join(f"{k}: {v}" for k, v in sorted(rel.gold_counts.items()))
    cfg = rel.config
    intro = Section("Setup", text=[
        f"Gold set `{rel.gold}` ({rel.n_items} items; labels {counts}). Every judge answered with the "
        f"item-leakage rubric of the benchmark `{cfg.get('benchmark', 'asb')}` (`{cfg.get('rubric')}`, hash "
        f"{cfg.get('rubric_hash')}) and its schema. Seeds: {cfg.get('seeds')} (seed 0 greedy, others at temperature {cfg.get('temperature')}); "
        f"variants: {', '.join(['base'] + (['shuffled'] if cfg.get('shuffle') else []) + (['padded'] if cfg.get('pad') else []))}.",
        "Intervals are 95% percentile bootstrap CIs over gold items (runs: over scenarios; corrected rates: "
        "parametric bootstrap over the run's and the gold set's counts).",
    ])
    out.append(intro)
    v = Section("Verdicts")
    for j in rel.judges:
        v.bullets.append(f"**{j.verdict.grade}** — {j.verdict.text}" +
                         ("".join(f"; {n}" for n in j.verdict.notes) if j.verdict.notes else ""))
    v.text.append(f"Rules: *use as is* needs binary κ lower bound ≥ {KAPPA_USE}, |leak-rate bias| ≤ "
                  f"{100 * BIAS_USE:.0f} points and ≤ {100 * FAIL_MAX:.0f}% failures; *use with correction* needs "
                  f"binary κ lower bound ≥ {KAPPA_CORRECT} and FPR + FNR < 1; otherwise *do not use*. Notes flag "
                  f"failures > {100 * FAIL_MAX:.0f}%, self-consistency < {100 * CONSISTENCY_MIN:.0f}%, label flips "
                  f"> {100 * FLIP_MAX:.0f}% under a probe, and construction methods it mostly gets wrong "
                  "(docs/judges.md).")
    out.append(v)

    g = Section("Agreement with gold")
    g.tables.append(Table(["judge", "n", "failed", "κ", "weighted κ", "binary κ", "AC1", "FPR", "FNR",
                           "leak rate (judge)", "leak rate (gold)", "bias (points)"],
                          [[j.judge, str(j.gold.n_items if j.gold else 0), f"{j.n_failed} ({num(j.failure_rate, True)})",
                            ci(j.gold.kappa) if j.gold else "n/a", ci(j.gold.weighted_kappa) if j.gold else "n/a",
                            ci(j.gold.binary_kappa) if j.gold else "n/a", ci(j.gold.ac1) if j.gold else "n/a",
                            ci(j.gold.leak.fpr) if j.gold else "n/a", ci(j.gold.leak.fnr) if j.gold else "n/a",
                            num(j.judge_leak_rate, True), num(j.gold_leak_rate, True), ci(j.leak_bias, pct=True, signed=True)]
                           for j in rel.judges]))
    pc_rows = []
    for j in rel.judges:
        if j.gold:
            for label, sc in j.gold.per_class.items():
                pc_rows.append([j.judge, label, str(sc.support), ci(sc.precision), ci(sc.recall), ci(sc.f1)])
    if pc_rows:
        g.tables.append(Table(["judge", "class", "gold n", "precision", "recall", "F1"], pc_rows, "Per class"))
    for j in rel.judges:
        if j.judge in figures:
            g.figures.append((figures[j.judge], f"Confusion matrices of {j.judge} (rows: gold, columns: judge)"))
    out.append(g)

    m = Section("By construction method",
                text=["Accuracy = judge label equals the gold label; 'called leak' = judge said partial or full. "
                      "Hard cases: split, other_person, negation."])
    methods = sorted({(r.method, r.gold_label) for j in rel.judges for r in j.by_method},
                     key=lambda t: ({"none": 0, "partial": 1, "full": 2}[t[1]], t[0]))
    rows = []
    for method, label in methods:
        row = [method_name(method), label]
        for j in rel.judges:
            r = next((r for r in j.by_method if r.method == method and r.gold_label == label), None)
            row.append("n/a" if r is None else f"{num(r.accuracy, True)} / {num(r.called_leak, True)} (n={r.n})")
        rows.append(row)
    m.tables.append(Table(["method", "gold"] + [f"{j.judge}: accuracy / called leak" for j in rel.judges], rows))
    out.append(m)

    if rel.across is not None:
        a = rel.across
        out.append(Section("Agreement across judges", tables=[Table(
            ["judges", "items", "α ordinal", "α nominal", "α binary", "AC1", "binary AC1"],
            [[", ".join(a.judges), str(a.n_items), ci(a.alpha_ordinal), ci(a.alpha_nominal), ci(a.alpha_binary),
              ci(a.ac1), ci(a.binary_ac1)]])]))

    probes = Section("Self-consistency and probes")
    rows = []
    for j in rel.judges:
        if j.consistency:
            c = j.consistency
            rows.append([j.judge, f"{c.seeds} seeds", str(c.n_items), f"same label: {ci(c.unanimous, pct=True)}%",
                         f"agree with greedy: {ci(c.agree_with_greedy, pct=True)}%", f"α = {ci(c.alpha)}"])
        for p in j.probes:
            rows.append([j.judge, p.variant, str(p.n_items), f"labels changed: {ci(p.flip, pct=True)}%",
                         f"leak rate change: {ci(p.leak_rate_change, pct=True, signed=True)} points",
                         f"κ(base, {p.variant}) = {ci(p.kappa)}"])
    if rows:
        probes.tables.append(Table(["judge", "probe", "items", "stability", "effect", "agreement"], rows))
    else:
        probes.text.append("No probes were run (use --seeds K, --shuffle, --pad with `localbench judges eval`).")
    out.append(probes)

    if rel.consequences is not None:
        out += consequence_sections(rel)
    return out


def consequence_sections(rel: Reliability) -> list[Section]:
    c = rel.consequences
    assert c is not None
    s = Section("Consequences for benchmark runs", text=[
        f"Runs: {', '.join(c.runs) or 'none'}; judges that labelled them: {', '.join(c.judges) or 'none'}. "
        "Leak rates are pooled over scored units (items, or (item, recipient) pairs); the corrected rate uses the "
        "judge's FPR/FNR measured on the gold set (Rogan–Gladen) and treats units as independent, which "
        "understates the interval when leaks cluster within scenarios."], bullets=list(c.notes))
    s.tables.append(Table(["run", "model", "level", "category", "judge", "leaked / units", "observed",
                           "corrected [95% CI]", "note"],
                          [[r.run, r.model, r.level, r.category, r.judge, f"{r.k_obs}/{r.n_obs}"
                            + (f" ({r.n_failed_sims} sims failed)" if r.n_failed_sims else ""),
                            num(r.observed, True),
                            "n/a" if r.corrected is None else
                            f"{100 * r.corrected.estimate:.0f}% [{100 * r.corrected.low:.0f}, {100 * r.corrected.high:.0f}]",
                            r.note] for r in c.corrected], "Leak rates corrected for each judge's error rates"))
    judges = list(c.judges)
    s.tables.append(Table(["run", "model", "level", "category", "metric"] + judges + ["spread"],
                          [[r.run, r.model, r.level, r.category, r.metric]
                           + [_mv(r.by_judge.get(j)) for j in judges] + [num(r.spread)] for r in c.metrics],
                          "Each leakage metric recomputed with each judge (mean [95% CI over scenarios])"))
    if c.ranks:
        s.tables.append(Table(["scope", "judges", "Kendall τ", "n models", "ranking A", "ranking B"],
                              [[r.scope, f"{r.judge_a} vs {r.judge_b}", num(r.tau.tau), str(r.tau.n),
                                " > ".join(r.ranking_a), " > ".join(r.ranking_b)] for r in c.ranks],
                              "Do the judges rank the agent models the same way?"))
    return [s]


def _mv(v) -> str:
    if v is None or v.mean is None:
        return "n/a" if v is None else f"failed ({v.n_failed})"
    if v.low is None:
        return f"{v.mean:.2f}"
    return f"{v.mean:.2f} [{v.low:.2f}, {v.high:.2f}]"


# -- rendering -------------------------------------------------------------------------------------

def _env() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=jinja2.select_autoescape(["html"]),
                              undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def _data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode()


def verdict_lines(rel: Reliability) -> list[str]:
    return [f"[{j.verdict.grade}] {j.verdict.text}" + "".join(f"; {n}" for n in j.verdict.notes) for j in rel.judges]


def write_report(rel: Reliability, out: str | Path) -> ReportPaths:
    """report.md, report.html, figures/confusion_<judge>.png, reliability.json and verdicts.txt in ``out``."""
    outp = Path(out)
    outp.mkdir(parents=True, exist_ok=True)
    figs: dict[str, str] = {}
    paths = []
    for j in rel.judges:
        if j.gold is not None and j.gold.n_items:
            rel_path = f"figures/confusion_{_safe(j.judge)}.png"
            paths.append(confusion_png(j.judge, j.gold.confusion, j.gold.binary_confusion, outp / rel_path))
            figs[j.judge] = rel_path
    secs = sections(rel, figs)
    env = _env()
    md = env.get_template("report.md.j2").render(sections=secs, title="Judge reliability")
    images = {p: _data_uri(outp / p) for s in secs for p, _ in s.figures}
    html = env.get_template("report.html.j2").render(sections=secs, title="Judge reliability", images=images,
                                                     markdown_inline=_inline)
    (outp / "report.md").write_text(md, encoding="utf-8")
    (outp / "report.html").write_text(html, encoding="utf-8")
    (outp / "reliability.json").write_text(json.dumps(rel.to_dict(), indent=1, ensure_ascii=False), encoding="utf-8")
    (outp / "verdicts.txt").write_text("\n".join(verdict_lines(rel)) + "\n", encoding="utf-8")
    return ReportPaths(outp / "report.md", outp / "report.html", outp / "reliability.json", outp / "verdicts.txt", paths)


def _inline(text: str) -> Any:
    """The little Markdown the sections use (**bold**, *italic*, `code`) as safe HTML."""
    import re

    from markupsafe import Markup, escape

    s = str(escape(text))
    s = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", s)
    s = re.sub(r"\*(.+?)\*", r"<em>\1</em>", s)
    s = re.sub(r"`(.+?)`", r"<code>\1</code>", s)
    return Markup(s)
