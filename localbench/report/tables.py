"""The paper's tables from a run: built once as a Table, rendered as Markdown, LaTeX, CSV and HTML.

- Table 2 (`main_table`): models × headline metrics at one level, "mean ± half-width" (or
  "mean [low, high]"), best value per column in bold, "—" for missing, † where scenarios failed.
- Table 3 (`ladder_table`): levels × (dyadic leak, multi-party leak, IAS, TCQ, Task%) per model,
  with a Δ row from the first to the last level.
- Behaviour rates per model and level, and the paired comparisons.
"""

from __future__ import annotations

import csv
import html
import io
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Union

from localbench.report.aggregate import Estimate, bootstrap_settings, pooled_leak, pooled_metric
from localbench.report.data import RunData
from localbench.report.metrics import CATEGORIES, DYADIC, HEADLINE, MULTI_PARTY, UTILITY, decimals, higher_is_better

CellFormat = Literal["pm", "ci"]
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
    digits: int | None = None

    @property
    def ndigits(self) -> int:
        return self.digits if self.digits is not None else decimals(self.metric)

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
                vals[i] = round(c.mean, col.ndigits)  # compare what the reader sees
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
        d = col.ndigits
        sign = "+" if (col.signed or delta) else ""
        text = f"{cell.mean:{sign}.{d}f}"
        if delta or not cell.has_ci:
            return text
        if self.fmt == "ci":
            return f"{text} [{cell.low:.{d}f}, {cell.high:.{d}f}]"
        return f"{text} ± {(cell.high - cell.low) / 2:.{d}f}"

    def cell_parts(self, i: int, j: int) -> tuple[str, bool, bool]:
        """(text, bold, dagger) of one cell."""
        r, col = self.rows[i], self.columns[j]
        cell = r.cells[j]
        text = self._value_text(cell, col, r.kind == "delta")
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

    def all_notes(self) -> list[str]:
        f = self.failure_note()
        return self.notes + ([f] if f else [])

    def headers(self) -> list[str]:
        return self.label_headers + [f"{c.header} {c.arrow}".strip() for c in self.columns]

    # ---- formats ----

    def to_markdown(self) -> str:
        def md(s: str) -> str:
            return s.replace("|", "\\|").replace("*", "\\*")

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

    def to_html(self) -> str:
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
    "↓": r"$\downarrow$", DAGGER: r"$^\dagger$", "−": "-", "≥": r"$\geq$", "≤": r"$\leq$",
}
_LATEX_RE = re.compile("|".join(re.escape(k) for k in _LATEX))


def latex_escape(text: str) -> str:
    """Text safe inside a LaTeX table cell (special characters and the report's few symbols)."""
    return _LATEX_RE.sub(lambda m: _LATEX[m.group(0)], text)


# ------------------------------------------------------------------------------------------
# Builders
# ------------------------------------------------------------------------------------------


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


def _agents(run: RunData) -> list[tuple[str, str | None]]:
    """(model, judge) row keys; the judge is None (any) when the run has a single judge."""
    judges = run.judges()
    if len(judges) <= 1:
        return [(m, None) for m in run.models()]
    pairs = dict.fromkeys((r.model, r.judge) for r in run.scores.rows)
    return list(pairs)


def _label_headers(run: RunData, *extra: str) -> list[str]:
    return ["Model"] + (["Judge"] if len(run.judges()) > 1 else []) + list(extra)


def _labels(model: str, judge: str | None) -> list[str]:
    return [model] + ([judge] if judge is not None else [])


def _ci_note(run: RunData, fmt: CellFormat) -> str:
    b = bootstrap_settings(run)
    shape = "mean ± half-width" if fmt == "pm" else "mean [low, high]"
    return (f"Cells: {shape} of the {b['confidence']:.0%} percentile bootstrap CI over scenarios "
            f"({b['n_resamples']} resamples); {MISSING} = no data.")


def _has(run: RunData, metric: str, category: str) -> bool:
    return any(r.metric == metric and r.category == category and r.group == "" for r in run.scores.rows)


def main_table(run: RunData, level: str, fmt: CellFormat = "pm") -> Table:
    """Table 2: one row per model, the headline leakage metric of each category plus IAS, TCQ, Task%."""
    cols: list[tuple[Column, str]] = []
    for c in CATEGORIES:
        m = HEADLINE[c]
        if _has(run, m, c):
            cols.append((Column(m, m, higher_is_better(m)), c))
    for m in UTILITY:
        if _has(run, m, "ALL"):
            cols.append((Column(m, m, higher_is_better(m)), "ALL"))
    t = Table(name=f"table2_main_{_safe(level)}", title=f"Headline metrics by model at level {level}",
              label_headers=_label_headers(run), columns=[c for c, _ in cols], fmt=fmt, bold_best=True)
    for model, judge in _agents(run):
        cells: list[Cell] = [Estimate.from_row(run.row(col.metric, model, level, cat, judge), bool(col.higher_is_better))
                             for col, cat in cols]
        t.rows.append(Row(_labels(model, judge), cells))
    t.notes.append(_ci_note(run, fmt))
    t.notes.append("↓ lower is better, ↑ higher is better; the best value of each column is in bold. "
                   + ", ".join(f"{HEADLINE[c]} = {c}" for c in CATEGORIES if any(col.metric == HEADLINE[c] for col, _ in cols))
                   + "; IAS, TCQ and Task% are pooled over all categories.")
    absent = [HEADLINE[c] for c in CATEGORIES if not _has(run, HEADLINE[c], c)]
    if absent:
        t.notes.append(f"Not in this run: {', '.join(absent)}.")
    return t


def ladder_table(run: RunData, fmt: CellFormat = "pm") -> Table:
    """Table 3: per model, one row per level (dyadic leak, multi-party leak, IAS, TCQ, Task%) and a Δ row."""
    levels = run.levels()
    cats = set(run.categories())
    cols: list[Column] = []
    groups: list[tuple[str, tuple[str, ...]]] = []
    for header, group in (("Dyadic leak", DYADIC), ("Multi-party leak", MULTI_PARTY)):
        if cats & set(group):
            cols.append(Column(header, "leak", False))
            groups.append((header, group))
    util = [m for m in UTILITY if _has(run, m, "ALL")]
    cols += [Column(m, m, higher_is_better(m)) for m in util]
    t = Table(name="table3_ladder", title="Privacy ladder: leakage and utility by level",
              label_headers=_label_headers(run, "Level"), columns=cols, fmt=fmt)
    for model, judge in _agents(run):
        if t.rows:
            t.breaks.add(len(t.rows))
        block: list[list[Estimate]] = []
        for lv in levels:
            cells = [pooled_leak(run, model, lv, g, judge) for _, g in groups]
            cells += [Estimate.from_row(run.row(m, model, lv, "ALL", judge)) for m in util]
            block.append(cells)
            t.rows.append(Row(_labels(model, judge) + [lv], list(cells)))
        if len(levels) >= 2:
            first, last = block[0], block[-1]
            delta: list[Cell] = [Estimate(b.mean - a.mean) if a.mean is not None and b.mean is not None else None
                                 for a, b in zip(first, last)]
            t.rows.append(Row(_labels(model, judge) + [f"Δ {levels[0]}→{levels[-1]}"], delta, kind="delta"))
    t.notes.append(_ci_note(run, fmt))
    t.notes.append("Dyadic leak pools CD, MC, CU; multi-party leak pools GC, HS, CM, AM (each by its headline "
                   "metric: CM by CSLR, ACS counted as the violation rate 1 − ACS); each scenario counts once "
                   "(its seeds averaged).")
    if run.scenarios is None:
        t.notes.append("scenario_scores.jsonl is absent: pooled leak is the n-weighted mean of the category means, without a CI.")
    if len(levels) >= 2:
        t.notes.append(f"Δ = {levels[-1]} − {levels[0]} (means).")
    return t


def split_table(run: RunData, fmt: CellFormat = "pm") -> Table | None:
    """Full vs partial leaks per level, pooled over the categories that have the split (not AM).

    A falling full rate with a rising partial share is the abstraction paradox: the defense turns
    verbatim leaks into hints and paraphrases rather than removing them.
    """
    cats = [c for c in CATEGORIES if c != "AM" and _has(run, f"{HEADLINE[c]}_full", c)]
    if not cats:
        return None
    cols = [Column("Full", "leak", False), Column("Partial", "leak", False),
            Column("Partial share", "share", None)]
    t = Table(name="table5_full_partial", title="Full and partial leakage by level (pooled: " + ", ".join(cats) + ")",
              label_headers=_label_headers(run, "Level"), columns=cols, fmt=fmt)
    for model, judge in _agents(run):
        if t.rows:
            t.breaks.add(len(t.rows))
        for lv in run.levels():
            full = pooled_leak(run, model, lv, cats, judge, part="_full")
            part = pooled_leak(run, model, lv, cats, judge, part="_partial")
            share: Cell = None
            if full.mean is not None and part.mean is not None and full.mean + part.mean > 0:
                share = Estimate(part.mean / (full.mean + part.mean))
            t.rows.append(Row(_labels(model, judge) + [lv], [full, part, share]))
    t.notes.append(_ci_note(run, fmt))
    t.notes.append("Full: the private item itself was disclosed; partial: a recognisable hint or abstraction of it. "
                   "Partial share = partial / (full + partial), from the means.")
    return t


SECONDARY = (("CULR_worst", "CU"), ("CER", "CM"))


def secondary_table(run: RunData, fmt: CellFormat = "pm") -> Table | None:
    """The leakage metrics that are not a category's headline: CU's worse-off user, CM's extraction."""
    cols = [(Column(m, m, higher_is_better(m)), c) for m, c in SECONDARY if _has(run, m, c)]
    if not cols:
        return None
    t = Table(name="table2b_secondary", title="Secondary leakage metrics by level",
              label_headers=_label_headers(run, "Level"), columns=[c for c, _ in cols], fmt=fmt)
    for model, judge in _agents(run):
        for level in run.levels():
            cells: list[Cell] = [Estimate.from_row(run.row(col.metric, model, level, cat, judge), False)
                                 for col, cat in cols]
            t.rows.append(Row(_labels(model, judge) + [level], cells))
    t.notes.append(_ci_note(run, fmt))
    t.notes.append("CULR_worst: the cross-user leakage rate of the worse-off user (CU); CER: private items about "
                   "a competitor that reached other competitors (CM).")
    return t


def behaviour_names(run: RunData) -> list[str]:
    """NEG, POS, then the per-behaviour rates (B:<name>) found in scores.json or scenario_scores.jsonl."""
    names = {r.metric for r in run.scores.rows if r.metric in ("NEG", "POS") or r.metric.startswith("B:")}
    for s in run.scenarios or []:
        names.update(m for m in s.metrics if m.startswith("B:"))
    return sorted(names, key=lambda m: (m not in ("NEG", "POS"), m))


def behaviour_table(run: RunData, fmt: CellFormat = "pm") -> Table | None:
    """Observed behaviour counts (NEG, POS) and per-behaviour rates, pooled over categories.

    Uses the category-ALL rows of scores.json where they exist, else pools scenario_scores.jsonl.
    A behaviour's rate has no better direction here (some are desirable, some not).
    """
    names = behaviour_names(run)
    if not names:
        return None
    cols = [Column(m.removeprefix("B:"), m, higher_is_better(m) if m in ("NEG", "POS") else None) for m in names]
    t = Table(name="table4_behaviour", title="Behaviours observed (all categories pooled)",
              label_headers=_label_headers(run, "Level"), columns=cols, fmt=fmt)
    for model, judge in _agents(run):
        if t.rows:
            t.breaks.add(len(t.rows))
        for lv in run.levels():
            cells: list[Cell] = []
            for m in names:
                row = run.row(m, model, lv, "ALL", judge)
                cells.append(Estimate.from_row(row) if row is not None else pooled_metric(run, m, model, lv, judge))
            t.rows.append(Row(_labels(model, judge) + [lv], cells))
    t.notes.append(_ci_note(run, fmt))
    t.notes.append("NEG / POS: negative / positive behaviours observed per simulation; other columns: share of "
                   "simulations where the behaviour was observed (each scenario counts once).")
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

    Holm's correction always runs over every test in scores.json, also when only the
    significant rows are kept.
    """
    comps = run.scores.comparisons
    if not comps:
        return None
    valid = [i for i, c in enumerate(comps) if c.p_value is not None and math.isfinite(c.p_value)]
    adj = dict(zip(valid, holm([comps[i].p_value for i in valid])))  # type: ignore[misc]
    cols = [Column("Δ (b − a)", "diff", None, signed=True), Column("p", "", None), Column("p (Holm)", "", None),
            Column("n pairs", "", None), Column("sig.", "", None)]
    t = Table(name="comparisons", title="Paired comparisons (paired by scenario)",
              label_headers=["Metric", "Category", "Fixed", "a → b"], columns=cols, fmt="ci")
    for i, c in enumerate(comps):
        p, ph = (c.p_value if i in adj else None), adj.get(i)
        sig = "**" if ph is not None and ph < ALPHA else ("*" if p is not None and p < ALPHA else "")
        if significant_only and not sig:
            continue
        diff = Estimate(c.diff, c.ci_low, c.ci_high, c.n_pairs) if c.diff is not None and math.isfinite(c.diff) else None
        if sig:
            t.bold_rows.add(len(t.rows))
        t.rows.append(Row([c.metric, c.category, c.fixed, f"{c.a} → {c.b}"],
                          [diff, _p(p), _p(ph), str(c.n_pairs), sig]))
    t.notes.append(f"Δ = mean(b − a) over paired scenarios with its CI; * p < {ALPHA} (uncorrected), "
                   f"** still significant after Holm correction over all {len(valid)} tests in scores.json.")
    few = min((c.n_pairs for c in comps if c.n_pairs), default=0)
    if 0 < few < MIN_PAIRS_FOR_ALPHA:
        t.notes.append(f"With n pairs, the smallest p a sign-flip test can give is 2 / 2^n (0.5 at n = 2); "
                       f"comparisons with fewer than {MIN_PAIRS_FOR_ALPHA} pairs can never reach p < {ALPHA}.")
    return t


MIN_PAIRS_FOR_ALPHA = 6  # 2 / 2**6 = 0.031 < 0.05, while 2 / 2**5 = 0.0625 is not


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


def build_tables(run: RunData, fmt: CellFormat = "pm") -> list[Table]:
    """Every table of the report, in the order it shows them."""
    tables = [main_table(run, lv, fmt) for lv in run.levels()]
    tables.append(ladder_table(run, fmt))
    for extra in (secondary_table(run, fmt), behaviour_table(run, fmt), split_table(run, fmt), comparisons_table(run)):
        if extra is not None:
            tables.append(extra)
    return tables


def write_tables(tables: list[Table], out_dir: Path) -> list[Path]:
    return [p for t in tables for p in t.write(out_dir)]
