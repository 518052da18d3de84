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
from localbench.judging.cheaters import CHEATER_MAX
from localbench.judging.reliability import (
    BIAS_USE,
    above_floor,
    best_floor,
    CONSISTENCY_MIN,
    FAIL_MAX,
    FLIP_MAX,
    KAPPA_CORRECT,
    KAPPA_USE,
    MIN_MODELS_TO_RANK,
    JudgeReliability,
    Reliability,
    method_name,
    status_line,
)
from localbench.registry import DEFAULT_BENCHMARK
from localbench.runlog import RunFiles, RunPaths
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

def _rows_of(rel: Reliability) -> list[JudgeReliability]:
    """Every judge, then the reference floors, as rows of the same tables."""
    return list(rel.judges) + list(rel.floors)


def origin_lines(origin: str) -> list[str]:
    """What the gold's labels are about: real-transcript gold (a run's own judge inputs, labelled by
    people) is said in so many words; constructed gold is the default the rest of the setup describes."""
    from localbench.judging.transcript_gold import REAL_TRANSCRIPT

    if not origin:  # an eval made before the field
        return []
    if REAL_TRANSCRIPT not in origin:
        return [f"This is {origin}: its labels are known by construction (or were given by the source it names)."]
    return [f"This is **{origin}**: items drawn by `localbench judges sample` from a run's own judge inputs and "
            "labelled by people (`judges gold import --key`; each item's `meta.transcript` names its run, judge and "
            "call), so the judge is measured on the distribution it judges; the construction methods and floors "
            "that read construction templates do not apply to it."]


def _rubric_of(cfg: dict) -> str:
    return "the item-leakage rubric" if not cfg.get("positive") or "leak" in cfg["positive"] else "the rubric"


def judge_line(cfg: dict) -> str:
    """Which benchmark judge the eval measures, the metrics its labels feed, and the binary decision
    its FPR/FNR are about (an eval before ``bench_judge``: the benchmark's item judge)."""
    name = cfg.get("bench_judge") or "the item judge"
    positive = cfg.get("positive") or "a leak (partial or full)"
    return (f"Judge measured: **{name}** (the benchmark's judge of that name in a run's judgments.jsonl), feeding "
            f"{cfg.get('judge_metrics') or 'the leakage metrics'}. Its FPR and FNR are about the decision "
            f"*{positive}*; below, \"leak\" means that decision and none / partial / full its labels read as levels.")


def _setup(rel: Reliability) -> Section:
    counts = ", ".join(f"{k}: {v}" for k, v in sorted(rel.gold_counts.items()))
    cfg = rel.config
    of = (f"a stratified sample of {rel.n_items} of its {rel.n_gold} items" if cfg.get("sample")
          else f"{rel.n_items} items")
    mix = ", ".join(f"{m} {n}" for m, n in rel.mix.items())
    built = rel.build
    how = (f" Built with seed {built.get('seed')} from {built.get('source')}; templates {built.get('templates_hash')}"
           + (f"; rewrites by {built['rewrite']['generator']}: {built['rewrite']['accepted']} used, "
              f"{built['rewrite']['rejected']} rejected, {built['rewrite']['failed']} failed" if built.get("rewrite") else "")
           + "." if built else "")
    asked = ("all of one owner's items in one call, as a run asks them" if cfg.get("batch")
             else "one item per call")
    return Section("Setup", text=[
        f"Gold set `{rel.gold}` ({of}; labels {counts}). Construction mix: {mix or 'n/a'}.{how}",
        *origin_lines(cfg.get("gold_origin") or ""),
        judge_line(cfg),
        f"Every judge answered with {_rubric_of(cfg)} of the benchmark `{cfg.get('benchmark', DEFAULT_BENCHMARK)}` "
        f"(`{cfg.get('rubric')}`, hash {cfg.get('rubric_hash')}) and its schema, {asked}. Seeds: {cfg.get('seeds')} "
        f"(seed 0 greedy, others at temperature {cfg.get('temperature')}); variants: "
        f"{', '.join(['base'] + (['shuffled'] if cfg.get('shuffle') else []) + (['padded'] if cfg.get('pad') else []))}.",
        "Reference floors (the cheater bank), scored on the same items and shown beside every judge: *floor: "
        "substring* (labels by how many of the item's words appear), *floor: any_token* (a leak when any word of "
        "the value appears), *floor: keywords* (value words present and no negation or supposition word), *floor: "
        "learned* (a logistic regression on word and character n-grams, each item labelled by a model fitted on "
        "other scenarios only) and *floor: template* (which construction templates the messages use); and the "
        "null models, which ignore the content: *floor: constant:LABEL* (one answer for every item, one per "
        "label), *floor: length* (the conversation's length only) and *floor: position* (where the planted "
        "messages sit only), the last two fitted like the learned one. A judge worth using is above the best of "
        "them (binary κ intervals apart); one not above every null model is *do not use*; a gold set on which a "
        f"cheater reaches binary κ ≥ {CHEATER_MAX} is too easy to rank judges (`judges gold build` refuses to "
        "write one).",
        "Intervals are 95% percentile bootstrap CIs over gold items (per method: Wilson intervals; runs: over "
        "scenarios; corrected rates: scenarios resampled, the gold set's counts drawn from their posteriors).",
    ])


def sections(rel: Reliability, figures: dict[str, str]) -> list[Section]:
    out = [_setup(rel)]
    v = Section("Verdicts")
    for j in rel.judges:
        v.bullets.append(f"**{j.verdict.grade}** — {j.verdict.text}" +
                         ("".join(f"; {n}" for n in j.verdict.notes) if j.verdict.notes else ""))
    for f in rel.floors:
        v.bullets.append(f"*reference* — {f.judge}: κ = {ci(f.gold.kappa) if f.gold else 'n/a'} "
                         f"(binary κ = {ci(f.gold.binary_kappa) if f.gold else 'n/a'})")
    v.text.append(f"Rules: *use as is* needs binary κ lower bound ≥ {KAPPA_USE}, |leak-rate bias| ≤ "
                  f"{100 * BIAS_USE:.0f} points and ≤ {100 * FAIL_MAX:.0f}% failures; *use with correction* needs "
                  f"binary κ lower bound ≥ {KAPPA_CORRECT} and FPR + FNR < 1; otherwise *do not use*, as is a "
                  "judge whose binary κ interval is not wholly above every null-model floor's; a judge that "
                  "has not answered every item asked is *incomplete* and gets no verdict. Notes flag "
                  f"failures > {100 * FAIL_MAX:.0f}%, self-consistency < {100 * CONSISTENCY_MIN:.0f}%, label flips "
                  f"> {100 * FLIP_MAX:.0f}% under a probe, construction methods it mostly gets wrong, and a judge "
                  "that does not beat the reference floors (docs/judges.md).")
    out.append(v)

    g = Section("Agreement with gold")
    best = best_floor({f.judge: f.gold.binary_kappa for f in rel.floors if f.gold})
    if best is not None:
        g.tables.append(Table(["judge", "binary κ", "best cheater", "cheater binary κ", "above the cheater?"],
                              [[j.judge, ci(j.gold.binary_kappa) if j.gold else "n/a", best[0], ci(best[1]),
                                ("yes" if above_floor(j.gold.binary_kappa, best[1]) else "NO (intervals overlap)")
                                if j.gold else "n/a"] for j in rel.judges],
                              "Each judge beside the best cheater of the bank (substring, any-token, keywords, a "
                              "learned bag of n-grams scored by cross-validation grouped by scenario, the template "
                              "matcher): a judge whose interval overlaps the cheater's is flagged"))
    g.tables.append(Table(["judge", "n", "failed", "κ", "weighted κ", "binary κ", "AC1", "FPR", "FNR",
                           "leak rate (judge)", "leak rate (gold)", "bias (points)"],
                          [[j.judge, str(j.gold.n_items if j.gold else 0), f"{j.n_failed} ({num(j.failure_rate, True)})",
                            ci(j.gold.kappa) if j.gold else "n/a", ci(j.gold.weighted_kappa) if j.gold else "n/a",
                            ci(j.gold.binary_kappa) if j.gold else "n/a", ci(j.gold.ac1) if j.gold else "n/a",
                            ci(j.gold.leak.fpr) if j.gold else "n/a", ci(j.gold.leak.fnr) if j.gold else "n/a",
                            num(j.judge_leak_rate, True), num(j.gold_leak_rate, True), ci(j.leak_bias, pct=True, signed=True)]
                           for j in _rows_of(rel)]))
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

    rows_of = _rows_of(rel)
    m = Section("By construction method",
                text=["Accuracy = judge label equals the gold label; the error rate is FPR for the methods whose "
                      "label is none (the share called a leak) and FNR for the others (the share called none), with "
                      "a 95% Wilson interval (over the items of the method, n shown). Methods of this gold set "
                      f"(benchmark `{rel.config.get('benchmark', DEFAULT_BENCHMARK)}`): "
                      + (", ".join(f"{m} ({n})" for m, n in rel.mix.items()) or "n/a") + "."])
    methods = sorted({(r.method, r.gold_label) for j in rows_of for r in j.by_method},
                     key=lambda t: ({"none": 0, "partial": 1, "full": 2}[t[1]], t[0]))
    rows = []
    for method, label in methods:
        row = [method_name(method), label]
        for j in rows_of:
            r = next((r for r in j.by_method if r.method == method and r.gold_label == label), None)
            row.append("n/a" if r is None else
                       f"{num(r.accuracy, True)}; {r.error_kind} {ci(r.error, pct=True)}% (n={r.n})")
        rows.append(row)
    m.tables.append(Table(["method", "gold"] + [f"{j.judge}: accuracy; error" for j in rows_of], rows))
    forms = sorted({f.form for j in rows_of for f in j.by_form})
    if forms:
        frows = []
        for form in forms:
            first = next(f for j in rows_of for f in j.by_form if f.form == form)
            row = [form, f"{first.n} ({', '.join(f'{k} {v}' for k, v in first.labels.items() if v)})"]
            for j in rows_of:
                f = next((f for f in j.by_form if f.form == form), None)
                row.append("n/a" if f is None else f"{ci(f.kappa)}; binary {ci(f.binary_kappa)}")
            frows.append(row)
        m.tables.append(Table(["surface form", "items (gold labels)"] + [f"{j.judge}: κ" for j in rows_of], frows,
                              "κ by surface form: a leak and the hard negatives built from the same words "
                              "(the fact about someone else, denied, or supposed) side by side"))
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
        "judge's FPR/FNR measured on the gold set (Rogan–Gladen). The interval of all categories pooled resamples "
        "scenarios, not units, since leaks cluster within a scenario; a single category's draws its rate from a "
        "Jeffreys posterior on design-effect counts (the clustering estimated on all categories together). Both "
        "draw FPR and FNR from the gold set's counts; a category whose interval would span nearly [0, 1] is "
        "*not identified*."],
        bullets=list(c.notes))
    s.tables.append(Table(["run", "model", "condition", "category", "judge", "leaked / units", "observed",
                           "corrected [95% CI]", "note"],
                          [[r.run, r.model, r.condition, r.category, r.judge, f"{r.k_obs}/{r.n_obs}"
                            + (f" ({r.n_failed_sims} sims failed)" if r.n_failed_sims else ""),
                            num(r.observed, True),
                            ("not identified" if r.note.startswith("not identified") else "n/a") if r.corrected is None else
                            f"{100 * r.corrected.estimate:.0f}% [{100 * r.corrected.low:.0f}, {100 * r.corrected.high:.0f}]"
                            + (f" ({r.n_scenarios} scenarios)" if r.n_scenarios else ""),
                            r.note] for r in c.corrected], "Leak rates corrected for each judge's error rates"))
    judges = list(c.judges)
    s.tables.append(Table(["run", "model", "condition", "category", "metric"] + judges + ["spread"],
                          [[r.run, r.model, r.condition, r.category, r.metric]
                           + [_mv(r.by_judge.get(j)) for j in judges] + [num(r.spread)] for r in c.metrics],
                          "Each leakage metric recomputed with each judge (mean [95% CI over scenarios])"))
    if c.ranks:
        s.tables.append(Table(["scope", "judges", "Kendall τ", "n models", "ranking A", "ranking B"],
                              [[r.scope, f"{r.judge_a} vs {r.judge_b}",
                                num(r.tau.tau) if r.tau is not None else "too few models to rank",
                                str(r.n_models), " > ".join(r.ranking_a), " > ".join(r.ranking_b)] for r in c.ranks],
                              "Do the judges rank the agent models the same way? (Kendall τ needs at least "
                              f"{MIN_MODELS_TO_RANK} models)"))
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
    """One line per judge, after a first line that says so when the eval is incomplete or a sample."""
    status = status_line(rel)
    return ([status] if status else []) + [
        f"[{j.verdict.grade}] {j.verdict.text}" + "".join(f"; {n}" for n in j.verdict.notes) for j in rel.judges]


def write_report(rel: Reliability, out: str | Path) -> ReportPaths:
    """report.md, report.html, figures/confusion_<judge>.png, reliability.json and verdicts.txt in ``out``."""
    outp = Path(out)
    outp.mkdir(parents=True, exist_ok=True)
    figs: dict[str, str] = {}
    paths = []
    for j in rel.judges:
        if j.gold is not None and j.gold.n_items:
            rel_path = f"{RunFiles.FIGURES}/confusion_{_safe(j.judge)}.png"
            paths.append(confusion_png(j.judge, j.gold.confusion, j.gold.binary_confusion, outp / rel_path))
            figs[j.judge] = rel_path
    secs = sections(rel, figs)
    env = _env()
    status = status_line(rel)
    md = env.get_template("report.md.j2").render(sections=secs, title="Judge reliability", status=status)
    images = {p: _data_uri(outp / p) for s in secs for p, _ in s.figures}
    html = env.get_template("report.html.j2").render(sections=secs, title="Judge reliability", images=images,
                                                     markdown_inline=_inline, status=status)
    md_path, html_path = RunPaths(outp).report_md, RunPaths(outp).report_html  # named as a run's report is
    md_path.write_text(md, encoding="utf-8")
    html_path.write_text(html, encoding="utf-8")
    (outp / "reliability.json").write_text(json.dumps(rel.to_dict(), indent=1, ensure_ascii=False), encoding="utf-8")
    (outp / "verdicts.txt").write_text("\n".join(verdict_lines(rel)) + "\n", encoding="utf-8")
    return ReportPaths(md_path, html_path, outp / "reliability.json", outp / "verdicts.txt", paths)


def write_judges_report(rels: dict[str, Reliability], out: str | Path) -> Path:
    """OUT/report.md for an eval of several benchmark judges: one section per judge (what it is, its
    verdicts, and its own report in OUT/<judge>/), so every headline metric's judge is read in one place."""
    lines = ["# Judge reliability, one section per benchmark judge", ""]
    for name, rel in rels.items():
        lines += [f"## {name}", "", judge_line(rel.config), ""]
        lines += [f"- {line}" for line in verdict_lines(rel)]
        lines += ["", f"Full report: `{Path(rel.eval_dir).name}/report.md` ({rel.n_items} gold items).", ""]
    path = Path(out) / RunFiles.REPORT_MD
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _inline(text: str) -> Any:
    """The little Markdown the sections use (**bold**, *italic*, `code`) as safe HTML."""
    import re

    from markupsafe import Markup, escape

    s = str(escape(text))
    s = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", s)
    s = re.sub(r"\*(.+?)\*", r"<em>\1</em>", s)
    s = re.sub(r"`(.+?)`", r"<code>\1</code>", s)
    return Markup(s)
