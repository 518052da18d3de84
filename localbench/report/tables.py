"""Tables of a run: built once as a Table, rendered as Markdown, LaTeX, CSV and HTML.

The machinery every benchmark's report uses (cells "mean ± half-width" or "mean [low, high]",
best value per column in bold, "—" for missing, † where scenarios failed), the helpers its table
builders share (row keys, headers, CI notes, a column for a catalogue metric), and the tables
every report has: the headline table (models × each category's headline metric, from the design)
and the paired comparisons. A benchmark's own tables are built in its plug-in with these.
"""

from __future__ import annotations

import csv
import html
import io
import math
import re
from urllib.parse import quote
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Union

from localbench.design import ALL
from localbench.report.aggregate import Estimate, bootstrap_settings
from localbench.report.data import RunData
from localbench.scores import SELF_JUDGING, UNMEASURED
from localbench.stats import can_reach_significance, min_pairs_for_significance

CellFormat = Literal["pm", "ci"]
SINGLE = "(n = 1)"
FEW_FOR_PM = 5  # below this many scenarios a cell shows [low, high], never "±"
FLAG = "‡"
UNMEASURED_MARK = "°"  # a number from a judge no gold eval measured (scores.UNMEASURED)
DEGENERATE = "degenerate"
# why a judge's numbers carry FLAG (``Table.flagged``), as the table's note says it: a judge whose answers
# looked degenerate (judging.sanity's patterns), or the model under test judging itself (scores.SELF_JUDGING)
FLAG_READINGS = {
    DEGENERATE: "a judge whose answers looked degenerate ({judges}; see Judge warnings): read as the judge's output, "
                "not as a finding.",
    SELF_JUDGING: "the model under test as its own judge ({judges}; see Judge warnings): it may favour what it "
                  "wrote, so read as its view of itself, not as an independent finding.",
    UNMEASURED: "a judge never measured against gold ({judges}; see How far to trust these numbers): how often "
                "its labels are wrong is unknown, so the number is uncorrected.",
}
FLAG_MARKS = {UNMEASURED: UNMEASURED_MARK}  # the mark of each reason (FLAG for the others)
Cell = Union[Estimate, str, None]
MISSING = "—"
DAGGER = "†"
ALPHA = 0.05


@dataclass
class Column:
    header: str
    metric: str = ""  # decides precision and direction; "" for a text column
    higher_is_better: bool | None = None  # None: no direction (no arrow, no bold)
    signed: bool = False  # differences: always print the sign
    digits: int = 2
    pools: tuple[str, ...] = ()  # the metrics a pooled column is computed from: their judges' marks are its own

    @property
    def flag_metrics(self) -> tuple[str, ...]:
        """The metrics whose judges' marks (``Table.flagged``) this column's numbers carry."""
        return (self.metric, *self.pools)

    @property
    def arrow(self) -> str:
        return "" if self.higher_is_better is None else ("↑" if self.higher_is_better else "↓")


@dataclass
class Row:
    labels: list[str]
    cells: list[Cell]
    kind: Literal["data", "delta"] = "data"


@dataclass
class Table:
    name: str  # file stem under tables/
    title: str
    label_headers: list[str]
    columns: list[Column]
    rows: list[Row] = field(default_factory=list)
    breaks: set[int] = field(default_factory=set)  # row indices preceded by a rule
    notes: list[str] = field(default_factory=list)
    fmt: CellFormat = "pm"
    bold_best: bool = False
    bold_rows: set[int] = field(default_factory=set)  # rows whose numbers are bold (significant tests)
    flagged: dict[str, dict[str, str]] = field(default_factory=dict)  # metric -> {judge: why, a FLAG_READINGS key}

    # ---- logic shared by every format ----

    def best_rows(self, j: int) -> set[int]:
        """Rows holding the best value of column j (ties all win; needs two values to compare)."""
        col = self.columns[j]
        if not self.bold_best or col.higher_is_better is None:
            return set()
        vals: dict[int, float] = {}
        for i, r in enumerate(self.rows):
            c = r.cells[j]
            if r.kind == "data" and isinstance(c, Estimate) and c.mean is not None:
                vals[i] = round(c.mean, col.digits)  # compare what the reader sees
        if len(vals) < 2:
            return set()
        best = max(vals.values()) if col.higher_is_better else min(vals.values())
        return {i for i, v in vals.items() if v == best}

    def _value_text(self, cell: Cell, col: Column, delta: bool) -> str:
        if cell is None:
            return MISSING
        if isinstance(cell, str):
            return cell
        if cell.mean is None:
            return MISSING
        d = col.digits
        sign = "+" if (col.signed or delta) else ""
        text = f"{cell.mean:{sign}.{d}f}"
        if delta or not cell.has_ci:
            return text
        if cell.n == 1 and cell.low == cell.high:
            return f"{text} {SINGLE}"  # one scenario: its "interval" has no width and no meaning
        bounds = f"{text} [{cell.low:.{d}f}, {cell.high:.{d}f}]"
        if self.fmt == "ci" or not symmetric(cell, d) or cell.n < FEW_FOR_PM:
            return bounds  # few scenarios: the bounds, never a "± half-width" that looks like a normal interval
        return f"{text} ± {(cell.high - cell.low) / 2:.{d}f}"

    def interval_notes(self) -> list[str]:
        """What the cell shapes mean, for the shapes this table uses."""
        texts = [self.cell_parts(i, j)[0] for i in range(len(self.rows)) for j in range(len(self.columns))]
        out = []
        if self.fmt == "pm" and any("[" in t for t in texts):
            out.append("Where the interval is not symmetric about the mean (near 0 or 1, say), or rests on fewer "
                       f"than {FEW_FOR_PM} scenarios, a cell shows mean [low, high] instead of mean ± half-width.")
        if any(t.endswith(SINGLE) for t in texts):
            out.append(f"{SINGLE}: one scenario, so no interval.")
        return out

    def cell_parts(self, i: int, j: int) -> tuple[str, bool, bool]:
        """(text, bold, dagger) of one cell; a value from a flagged judge carries FLAG."""
        r, col = self.rows[i], self.columns[j]
        cell = r.cells[j]
        text = self._value_text(cell, col, r.kind == "delta")
        whys = {why for m in col.flag_metrics for why in self.flagged.get(m, {}).values()}
        if whys and isinstance(cell, Estimate) and text != MISSING:
            text += "".join(dict.fromkeys(FLAG_MARKS.get(why, FLAG) for why in sorted(whys, key=lambda w: w == UNMEASURED)))
        bold = text != MISSING and (i in self.best_rows(j) or (i in self.bold_rows and isinstance(cell, Estimate)))
        dagger = isinstance(cell, Estimate) and cell.any_failed
        return text, bold, dagger

    def failure_note(self) -> str | None:
        items = []
        for r in self.rows:
            for col, c in zip(self.columns, r.cells):
                if isinstance(c, Estimate) and c.any_failed:
                    n = c.n_failed_sims
                    sims = f"{n} simulation{'s' if n != 1 else ''}, " if n else ""
                    items.append(f"{' '.join(r.labels)} {col.header}: {sims}{c.n_failed} of {c.n + c.n_failed} "
                                 "scenarios left without a value")
        if not items:
            return None
        return (f"{DAGGER} values that could not be computed (a judge call failed, or the simulation crashed, "
                f"was not judged, or sent no agent message) are left out of the mean, never counted as no "
                f"leak: " + "; ".join(items) + ".")

    def flag_note(self) -> str | None:
        """What FLAG means here: one sentence per reason a judge of a shown column is flagged for."""
        whys: dict[str, set[str]] = {}
        for m, judges in self.flagged.items():
            if any(m in c.flag_metrics for c in self.columns):
                for judge, why in judges.items():
                    whys.setdefault(why, set()).add(judge)
        if not whys:
            return None
        return " ".join(f"{FLAG_MARKS.get(why, FLAG)} computed from the labels of "
                        + FLAG_READINGS[why].format(judges=", ".join(sorted(whys[why])))
                        for why in FLAG_READINGS if why in whys)

    def all_notes(self) -> list[str]:
        f, g = self.failure_note(), self.flag_note()
        return self.notes + self.interval_notes() + ([g] if g else []) + ([f] if f else [])

    def headers(self) -> list[str]:
        return self.label_headers + [f"{c.header} {c.arrow}".strip() for c in self.columns]

    # ---- formats ----

    def to_markdown(self) -> str:
        def md(s: str) -> str:
            return md_text(s).replace("|", "\\|").replace("*", "\\*")

        lines = [f"**{md(self.title)}**", "", "| " + " | ".join(md(h) for h in self.headers()) + " |",
                 "|" + "|".join([":--"] * len(self.label_headers) + ["--:"] * len(self.columns)) + "|"]
        for i, r in enumerate(self.rows):
            cells = [md(x) for x in r.labels]
            for j in range(len(self.columns)):
                text, bold, dagger = self.cell_parts(i, j)
                cells.append((f"**{md(text)}**" if bold else md(text)) + (DAGGER if dagger else ""))
            lines.append("| " + " | ".join(cells) + " |")
        notes = self.all_notes()
        if notes:
            lines.append("")
            lines += [f"{md(n)}  " for n in notes]
        return "\n".join(lines) + "\n"

    def to_latex(self) -> str:
        spec = "l" * len(self.label_headers) + "r" * len(self.columns)
        out = ["\\begin{table}[t]", "\\centering", "\\small", f"\\caption{{{latex_escape(self.title)}}}",
               f"\\label{{tab:{self.name}}}", f"\\begin{{tabular}}{{{spec}}}", "\\toprule",
               " & ".join(latex_escape(h) for h in self.headers()) + " \\\\", "\\midrule"]
        for i, r in enumerate(self.rows):
            if i in self.breaks:
                out.append("\\midrule")
            cells = [latex_escape(x) for x in r.labels]
            for j in range(len(self.columns)):
                text, bold, dagger = self.cell_parts(i, j)
                t = latex_escape(text)
                cells.append((f"\\textbf{{{t}}}" if bold else t) + ("$^\\dagger$" if dagger else ""))
            out.append(" & ".join(cells) + " \\\\")
        out += ["\\bottomrule", "\\end{tabular}"]
        for n in self.all_notes():
            out.append(f"\\par\\smallskip{{\\footnotesize {latex_escape(n)}}}")
        out.append("\\end{table}")
        return "\n".join(out) + "\n"

    def to_csv(self) -> str:
        """Numbers, not formatted text: mean, CI bounds, n and failures for every column."""
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        head = list(self.label_headers) + ["row_kind"]
        for c in self.columns:
            head += [c.header] if c.metric == "" else [c.header, f"{c.header}_low", f"{c.header}_high",
                                                       f"{c.header}_n", f"{c.header}_n_failed",
                                                       f"{c.header}_n_failed_sims"]
        w.writerow(head)
        for r in self.rows:
            line: list[object] = list(r.labels) + [r.kind]
            for c, cell in zip(self.columns, r.cells):
                if c.metric == "":
                    line.append("" if cell is None else cell.value if isinstance(cell, Shown)
                                else cell if isinstance(cell, str) else _num(cell.mean))
                elif isinstance(cell, Estimate):
                    line += [_num(cell.mean), _num(cell.low), _num(cell.high), cell.n, cell.n_failed,
                             cell.n_failed_sims]
                else:
                    line += ["", "", "", "", "", ""]
            w.writerow(line)
        return buf.getvalue()

    def to_html(self, viewer: str | None = None) -> str:
        """An HTML table; with ``viewer`` (the viewer page's URL), each number links to the
        simulations it was computed from."""
        e = html.escape
        out = [f'<table class="results" id="tab-{e(self.name)}">', f"<caption>{e(self.title)}</caption>", "<thead><tr>"]
        out += [f"<th>{e(h)}</th>" for h in self.headers()]
        out.append("</tr></thead><tbody>")
        for i, r in enumerate(self.rows):
            cls = ["delta" if r.kind == "delta" else "", "break" if i in self.breaks else ""]
            out.append(f'<tr class="{" ".join(c for c in cls if c)}">' + "".join(f'<th scope="row">{e(x)}</th>' for x in r.labels))
            for j in range(len(self.columns)):
                text, bold, dagger = self.cell_parts(i, j)
                t = f"<strong>{e(text)}</strong>" if bold else e(text)
                cell = r.cells[j]
                if viewer and isinstance(cell, Estimate) and cell.where and text != MISSING:
                    query = "&".join(f"{k}={quote(v, safe=',')}" for k, v in cell.where)
                    t = f'<a class="cell" href="{e(viewer)}#list?{e(query)}" title="open these simulations">{t}</a>'
                out.append(f"<td>{t}{'<sup>' + DAGGER + '</sup>' if dagger else ''}</td>")
            out.append("</tr>")
        out.append("</tbody></table>")
        for n in self.all_notes():
            out.append(f'<p class="note">{e(n)}</p>')
        return "\n".join(out)

    def write(self, out_dir: Path) -> list[Path]:
        out_dir.mkdir(parents=True, exist_ok=True)
        paths = []
        for ext, text in (("md", self.to_markdown()), ("tex", self.to_latex()), ("csv", self.to_csv())):
            p = out_dir / f"{self.name}.{ext}"
            p.write_text(text, encoding="utf-8")
            paths.append(p)
        return paths


def md_text(s: str) -> str:
    """Text safe in Markdown that is later rendered to HTML: markup characters as entities."""
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def symmetric(cell: Estimate, digits: int) -> bool:
    """Whether mean ± half-width says the same as [low, high] at the digits shown."""
    assert cell.mean is not None and cell.low is not None and cell.high is not None
    return abs((cell.high - cell.mean) - (cell.mean - cell.low)) < 10 ** -digits


def _num(x: float | None) -> str:
    return "" if x is None or not math.isfinite(x) else repr(float(x))


# ------------------------------------------------------------------------------------------
# LaTeX
# ------------------------------------------------------------------------------------------

_LATEX = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}",
    "±": r"$\pm$", "—": "---", "–": "--", "→": r"$\rightarrow$", "Δ": r"$\Delta$", "↑": r"$\uparrow$",
    "↓": r"$\downarrow$", DAGGER: r"$^\dagger$", FLAG: r"$^\ddagger$", "−": "-", "≥": r"$\geq$", "≤": r"$\leq$",
}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX))


def latex_escape(text: str) -> str:
    """Text safe inside a LaTeX table cell (special characters and the report's few symbols)."""
    return _LATEX_RE.sub(lambda m: _LATEX[m.group(0)], text)


# ------------------------------------------------------------------------------------------
# Builders
# ------------------------------------------------------------------------------------------


def safe_name(name: str) -> str:
    """A string usable in a file name (a condition in a table's file stem)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def agents(run: RunData) -> list[tuple[str, str | None]]:
    """(model, judge) row keys; the judge is None (any) when the run has a single judge."""
    judges = run.judges()
    if len(judges) <= 1:
        return [(m, None) for m in run.models()]
    pairs = dict.fromkeys((r.model, r.judge) for r in run.scores.rows)
    return list(pairs)


def label_headers(run: RunData, *extra: str) -> list[str]:
    return ["Model"] + (["Judge"] if len(run.judges()) > 1 else []) + list(extra)


def labels(model: str, judge: str | None) -> list[str]:
    return [model] + ([judge] if judge is not None else [])


def ci_note(run: RunData, fmt: CellFormat, metrics: list[str] | None = None) -> str:
    """What a table's intervals are: each metric's own (``Metric.interval``), bootstrap when unsaid."""
    b = bootstrap_settings(run)
    shape = "mean ± half-width" if fmt == "pm" else "mean [low, high]"
    boot = f"percentile bootstrap CI over scenarios ({b['n_resamples']} resamples)"
    wilson = "Wilson score interval over simulations"
    kinds = {m: run.design.metric(m).interval for m in dict.fromkeys(metrics or [])}
    if "wilson" not in kinds.values():
        return f"Cells: {shape} of the {b['confidence']:.0%} {boot}; {MISSING} = no data."
    if "bootstrap" not in kinds.values():
        return f"Cells: {shape} of the {b['confidence']:.0%} {wilson}; {MISSING} = no data."
    names = {k: _words([m for m, v in kinds.items() if v == k]) for k in ("wilson", "bootstrap")}
    return (f"Cells: {shape} of the {b['confidence']:.0%} interval: the {wilson} for {names['wilson']}, the {boot} "
            f"for {names['bootstrap']}; {MISSING} = no data.")


def has_row(run: RunData, metric: str, category: str) -> bool:
    return any(r.metric == metric and r.category == category and r.group == "" for r in run.scores.rows)


def metric_column(run: RunData, metric: str, header: str | None = None, direction: bool = True) -> Column:
    """A column for a catalogue metric: its direction (arrow, bold best) and precision."""
    info = run.design.metric(metric)
    return Column(header or metric, metric, info.higher_is_better if direction else None, digits=info.decimals)


def _words(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _headline_columns(run: RunData, pooled: tuple[str, ...]) -> list[tuple[Column, str]]:
    """(column, category) for each category's headline metric in this run, then the pooled metrics."""
    d = run.design
    cols: list[tuple[Column, str]] = []
    shown = [c for c in d.categories if d.headline.get(c) and has_row(run, d.headline[c], c)]
    for c in shown:
        m = d.headline[c]
        shared = sum(d.headline[o] == m for o in shown) > 1  # one metric heads several categories: name them
        cols.append((metric_column(run, m, f"{m} {c}" if shared else None), c))
    return cols + [(metric_column(run, m), ALL) for m in pooled if has_row(run, m, ALL)]


def _headline_notes(run: RunData, cols: list[tuple[Column, str]], pooled: tuple[str, ...], fmt: CellFormat,
                    bold: bool = True) -> list[str]:
    d = run.design
    keys = ", ".join(f"{d.headline[c]} = {c}" for c in d.categories
                     if any(col.metric == d.headline.get(c) and col.header == d.headline[c] for col, _ in cols))
    said = [keys] if keys else []
    if pooled:
        said.append(f"{_words(list(pooled))} {'is' if len(pooled) == 1 else 'are'} pooled over all categories")
    best = "; the best value of each column is in bold" if bold else ""
    notes = [ci_note(run, fmt, [col.metric for col, _ in cols]),
             f"↓ lower is better, ↑ higher is better{best}." + (f" {'; '.join(said)}." if said else "")]
    absent = [d.headline[c] for c in d.categories if c in d.headline and not has_row(run, d.headline[c], c)]
    if absent:
        notes.append(f"Not in this run: {', '.join(absent)}.")
    return notes


def headline_table(run: RunData, condition: str, fmt: CellFormat = "pm", pooled: tuple[str, ...] = (),
                   name: str | None = None) -> Table:
    """One row per model: each category's headline metric (the design's), then the ``pooled``
    metrics over every category, at one condition."""
    cols = _headline_columns(run, pooled)
    t = Table(name=name or f"headline_{safe_name(condition)}", title=f"Headline metrics by model at {run.design.condition.label.lower()} {condition}",
              label_headers=label_headers(run), columns=[c for c, _ in cols], fmt=fmt, bold_best=True)
    for model, judge in agents(run):
        cells: list[Cell] = [Estimate.from_row(run.row(col.metric, model, condition, cat, judge), bool(col.higher_is_better))
                             for col, cat in cols]
        t.rows.append(Row(labels(model, judge), cells))
    t.notes += _headline_notes(run, cols, pooled, fmt)
    return t


def headline_by_condition_table(run: RunData, fmt: CellFormat = "pm", pooled: tuple[str, ...] = (),
                            name: str = "headline") -> Table:
    """The run's results on one screen: a row per model and condition, each category's headline metric
    and the ``pooled`` metrics (the report opens with it)."""
    cols = _headline_columns(run, pooled)
    t = Table(name=name, title=f"Headline metrics by model and {run.design.condition.label.lower()}",
              label_headers=label_headers(run, run.design.condition.label), columns=[c for c, _ in cols], fmt=fmt)
    for model, judge in agents(run):
        if t.rows:
            t.breaks.add(len(t.rows))
        for condition in run.conditions():
            cells: list[Cell] = [Estimate.from_row(run.row(col.metric, model, condition, cat, judge),
                                                   bool(col.higher_is_better)) for col, cat in cols]
            t.rows.append(Row(labels(model, judge) + [condition], cells))
    t.notes += _headline_notes(run, cols, pooled, fmt, bold=False)
    return t


def holm(pvalues: list[float]) -> list[float]:
    """Holm-adjusted p-values (statsmodels), for many comparisons reported at once."""
    if not pvalues:
        return []
    from statsmodels.stats.multitest import multipletests

    return [float(p) for p in multipletests(pvalues, method="holm")[1]]


def comparisons_table(run: RunData, significant_only: bool = False) -> Table | None:
    """Paired comparisons (sign-flip permutation p-value, bootstrap CI of Δ); '*' marks p < 0.05,
    '**' also after Holm correction.

    Holm's family is every test in scores.json that could reach p < 0.05 (enough pairs), also when
    only the significant rows are kept; a test with too few pairs is shown, outside the family.
    """
    comps = run.scores.comparisons
    if not comps:
        return None
    testable = [i for i, c in enumerate(comps)
                if c.p_value is not None and math.isfinite(c.p_value) and can_reach_significance(c.n_pairs, ALPHA)]
    adj = dict(zip(testable, holm([comps[i].p_value for i in testable])))  # type: ignore[misc]
    cols = [Column("Δ (b − a)", "diff", None, signed=True), Column("p", "", None), Column("p (Holm)", "", None),
            Column("n pairs", "", None), Column("sig.", "", None)]
    t = Table(name="comparisons", title="Paired comparisons (paired by scenario)",
              label_headers=["Metric", "Category", "Fixed", "a → b"], columns=cols, fmt="ci")
    for i, c in enumerate(comps):
        p = c.p_value if c.p_value is not None and math.isfinite(c.p_value) else None
        ph = adj.get(i)
        sig = "**" if ph is not None and ph < ALPHA else ("*" if p is not None and p < ALPHA else "")
        if significant_only and not sig:
            continue
        diff = Estimate(c.diff, c.ci_low, c.ci_high, c.n_pairs) if c.diff is not None and math.isfinite(c.diff) else None
        if sig:
            t.bold_rows.add(len(t.rows))
        holm_cell: Cell = _p(ph) if ph is not None else ("too few pairs" if p is not None else None)
        t.rows.append(Row([c.metric, c.category, c.fixed, f"{c.a} → {c.b}"],
                          [diff, _p(p), holm_cell, str(c.n_pairs), sig]))
    tests = {c.test for c in comps}
    if "mcnemar" in tests:
        t.notes.append("p: McNemar's test on the discordant pairs (0/1 outcomes paired by simulation)"
                       + ("; sign-flip permutation test elsewhere." if "sign-flip" in tests else "."))
    t.notes.append(f"Δ = mean(b − a) over paired scenarios with its CI; * p < {ALPHA} (uncorrected), "
                   f"** still significant after Holm correction over the {len(testable)} tests with at least "
                   f"{MIN_PAIRS_FOR_ALPHA} pairs.")
    if "sign-flip" in tests:
        from localbench.scoring import TEST_RESAMPLES
        from localbench.stats import max_sign_flip_mc_error, sign_flip_mc_error

        errs = [sign_flip_mc_error(c.p_value, c.n_pairs, TEST_RESAMPLES) for c in comps
                if c.test != "mcnemar" and c.p_value is not None and math.isfinite(c.p_value)]
        worst = max([e for e in errs if math.isfinite(e)], default=0.0)
        t.notes.append(f"Sign-flip p-values: exact (every sign pattern) up to {int(math.log2(TEST_RESAMPLES))} pairs, "
                       f"else from {TEST_RESAMPLES} random sign flips with a Monte Carlo standard error of "
                       f"sqrt(p(1 − p)/{TEST_RESAMPLES}) ≤ {max_sign_flip_mc_error(TEST_RESAMPLES):.3f}; the largest "
                       f"here is {worst:.4f}.")
    few = sum(1 for c in comps if c.n_pairs and not can_reach_significance(c.n_pairs, ALPHA))
    if few:
        t.notes.append(f"With n pairs, the smallest p a sign-flip test can give is 2 / 2^n (0.5 at n = 2): the {few} "
                       f"comparisons with fewer than {MIN_PAIRS_FOR_ALPHA} pairs can never reach p < {ALPHA}, so they "
                       "are shown but left out of the Holm family (\"too few pairs\").")
    return t


MIN_PAIRS_FOR_ALPHA = min_pairs_for_significance(ALPHA)  # 6: 2 / 2**6 = 0.031 < 0.05, while 2 / 2**5 = 0.0625 is not


class Shown(str):
    """A number shown as text in a table (a p-value as "<0.001"); the CSV gets the number itself."""

    value: float

    def __new__(cls, text: str, value: float) -> "Shown":
        s = super().__new__(cls, text)
        s.value = value
        return s


def _p(p: float | None) -> str | None:
    if p is None:
        return None
    return Shown("<0.001" if p < 0.001 else f"{p:.3f}", p)


def write_tables(tables: list[Table], out_dir: Path) -> list[Path]:
    return [p for t in tables for p in t.write(out_dir)]
