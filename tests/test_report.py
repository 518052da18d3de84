"""The report: tables, figures, report.html / report.md and `localbench report`, from real run files.

The run directory comes from tests/report_fixtures.py (synthetic per-simulation values aggregated
by the real score stage); nothing here loads a model.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from localbench.errors import UserError
from localbench.report import build_report, load_run, render_report
from localbench.report.aggregate import Estimate
from localbench.benchmarks.asb.design import DESIGN
from localbench.benchmarks.asb.report import ladder_table
from localbench.report.data import RunData
from localbench.report.render import build_figures
from localbench.report.tables import Column, Row, Table, headline_table, latex_escape
from localbench.scores import ScoreRow, Scores

sys.path.insert(0, str(Path(__file__).parent))
from report_fixtures import MODELS, make_run_dir  # noqa: E402


def main_table(run, level, fmt="pm"):
    """ASB's Table 2 at one level."""
    return headline_table(run, level, fmt, pooled=("IAS", "TCQ", "Task%"), name=f"table2_main_{level}")

FIGURES = ("level_effect", "cd_domain_heatmap", "leak_vs_tcq", "full_partial_split")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    run = make_run_dir(tmp_path_factory.mktemp("runs") / "asb-fixture")
    return run, build_report(run)


def _row(metric, model, condition, category, mean, n=10, n_failed=0, hib=False, width=0.1):
    lo = None if mean is None else mean - width / 2
    hi = None if mean is None else mean + width / 2
    return ScoreRow(metric=metric, model=model, judge="j", condition=condition, category=category, mean=mean, ci_low=lo,
                    ci_high=hi, n=n if mean is not None else 0, n_failed=n_failed, higher_is_better=hib)


def _run(rows, tmp_path: Path) -> RunData:
    return RunData(path=tmp_path, scores=Scores(run_id="hand", benchmark="asb", rows=rows), design=DESIGN)


# ---------------------------------------------------------------------------- whole report


def test_report_files_and_self_contained_html(rendered):
    run, rep = rendered
    html = rep.html.read_text()
    assert rep.html == run / "report.html" and rep.markdown.is_file()
    # every table, by id, with its caption
    for name in ("table2_main_L0", "table2_main_L1", "table2_main_L2", "table3_ladder", "table4_behaviour",
                 "table5_full_partial", "comparisons"):
        assert f'id="tab-{name}"' in html, name
        for ext in ("md", "tex", "csv"):
            assert (run / "tables" / f"{name}.{ext}").stat().st_size > 200
    # figures are embedded, byte for byte the PNG files; nothing is fetched from elsewhere
    embedded = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(embedded) == len(FIGURES)
    files = {(run / "figures" / f"{n}.png").read_bytes() for n in FIGURES}
    assert {base64.b64decode(b) for b in embedded} == files
    assert not re.search(r'(src|href)="(?!data:|#)', html) and "<link" not in html and "<script" not in html
    # run id, spec summary, provenance from spec.yaml, comparisons and failures
    spec = load_run(run).spec_doc
    assert "asb-fixture" in html and all(m in html for m in MODELS)
    assert spec["versions"]["pydantic"] in html and spec["models"]["qwen3-8b"]["revision"] in html
    assert spec["hashes"]["judges/leakage.j2"] in html
    n_sig = sum(1 for c in load_run(run).scores.comparisons if c.p_value is not None and c.p_value < 0.05)
    assert n_sig > 0 and f"{n_sig} significant at p &lt; 0.05" in html
    failures = load_run(run).scores.failures
    assert sum(failures.values()) > 0
    assert f"Failed judge calls in total: <strong>{sum(failures.values())}</strong>" in html


def test_markdown_report_links_existing_files(rendered):
    run, rep = rendered
    md = rep.markdown.read_text()
    links = re.findall(r"\]\(([^)]+)\)", md)
    assert {f"figures/{n}.png" for n in FIGURES} <= set(links)
    assert all((run / link).is_file() for link in links)
    assert "| qwen3-8b |" in md and "## Paired comparisons" in md and "## Provenance" in md


def test_pngs_are_real_pictures(rendered):
    import matplotlib.image as mpimg

    run, rep = rendered
    assert set(rep.figures) == set(FIGURES)
    for name in FIGURES:
        p = run / "figures" / f"{name}.png"
        assert p.stat().st_size > 5_000, name
        img = mpimg.imread(p)[..., :3]
        assert img.std() > 0.05, f"{name} is (nearly) a single colour"
        rgb = (img * 255).astype(np.uint32)
        colours = np.unique((rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2])
        assert colours.size > 20, f"{name} has only {colours.size} colours"


def test_csv_holds_the_numbers_of_scores_json(rendered):
    run, _ = rendered
    scores = load_run(run).scores
    rows = list(csv.DictReader(io.StringIO((run / "tables" / "table2_main_L0.csv").read_text())))
    assert [r["Model"] for r in rows] == sorted(MODELS)  # the score stage sorts models
    for r in rows:
        ref = scores.get("CDLR", model=r["Model"], condition="L0", category="CD", group="")[0]
        assert float(r["CDLR"]) == pytest.approx(ref.mean) and float(r["CDLR_low"]) == pytest.approx(ref.ci_low)
        assert int(r["CDLR_n"]) == ref.n and int(r["CDLR_n_failed"]) == ref.n_failed


def test_failed_cells_carry_a_dagger_and_a_footnote(rendered):
    run, _ = rendered
    md = (run / "tables" / "table2_main_L2.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith("| smollm2-135m"))
    assert "| —† |" in line  # every MC judgment of this model at L2 failed: no value, flagged
    assert "smollm2-135m MLR: 12 simulations, 6 of 6 scenarios left without a value" in md
    # a scenario whose other seed scored keeps a value, and the cell still says a simulation failed
    assert "1 simulation, 0 of 6 scenarios left without a value" in md
    assert "never counted as no leak" in md
    tex = (run / "tables" / "table2_main_L2.tex").read_text()
    assert "---$^\\dagger$" in tex


# ---------------------------------------------------------------------------- table logic


def test_bold_best_respects_direction_and_ties(tmp_path):
    rows = [
        _row("CDLR", "a", "L0", "CD", 0.20), _row("CDLR", "b", "L0", "CD", 0.40), _row("CDLR", "c", "L0", "CD", 0.201),
        _row("ACS", "a", "L0", "AM", 0.70, hib=True), _row("ACS", "b", "L0", "AM", 0.90, hib=True),
        _row("ACS", "c", "L0", "AM", None, n_failed=3, hib=True),
        _row("TCQ", "a", "L0", "ALL", 0.5, hib=True),  # one value only: nothing to compare
    ]
    t = main_table(_run(rows, tmp_path), "L0")
    headers = [c.header for c in t.columns]
    assert headers == ["CDLR", "ACS", "TCQ"]
    assert t.best_rows(0) == {0, 2}  # 0.20 and 0.201 print the same: both bold
    assert t.best_rows(1) == {1}  # higher is better; the missing value never wins
    assert t.best_rows(2) == set()
    md = t.to_markdown()
    assert "| a | **0.20 ± 0.05** | 0.70 ± 0.05 | 0.50 ± 0.05 |" in md
    assert "| b | 0.40 ± 0.05 | **0.90 ± 0.05** | — |" in md
    assert "| c | **0.20 ± 0.05** | —† | — |" in md
    assert "c ACS: 3 of 3" in md
    assert "\\textbf{0.90 $\\pm$ 0.05}" in t.to_latex()
    assert "<strong>0.90 ± 0.05</strong>" in t.to_html()


def test_ci_format(tmp_path):
    t = main_table(_run([_row("CDLR", "a", "L0", "CD", 0.25), _row("CDLR", "b", "L0", "CD", 0.5)], tmp_path), "L0", fmt="ci")
    assert "**0.25 [0.20, 0.30]**" in t.to_markdown()


def test_latex_escaping():
    assert latex_escape("Task% & a_b #1 $x$ {y} ~^\\") == (
        r"Task\% \& a\_b \#1 \$x\$ \{y\} \textasciitilde{}\textasciicircum{}\textbackslash{}")
    assert latex_escape("Δ L0→L2 ± —") == r"$\Delta$ L0$\rightarrow$L2 $\pm$ ---"
    t = Table(name="t", title="50% of my_model & co", label_headers=["Model"], columns=[Column("Task%", "Task%", True, digits=1)],
              rows=[Row(["my_model&co"], [Estimate(12.34)])])
    tex = t.to_latex()
    assert r"\caption{50\% of my\_model \& co}" in tex
    assert r"my\_model\&co & 12.3 \\" in tex
    assert r"Task\% $\uparrow$" in tex
    assert "\\toprule" in tex and "\\bottomrule" in tex
    # no unescaped specials outside commands: every & left is a column separator
    body = [ln for ln in tex.splitlines() if ln.endswith("\\\\")]
    assert all(ln.count(" & ") == 1 for ln in body)


def test_delta_row_from_first_to_last_level(tmp_path):
    rows = []
    for lv, cd, mc, gc, acs, tcq in (("L0", 0.6, 0.3, 0.5, 0.7, 0.40), ("L1", 0.5, 0.2, 0.4, 0.8, 0.45),
                                     ("L2", 0.2, 0.1, 0.1, 0.9, 0.55)):
        rows += [_row("CDLR", "m", lv, "CD", cd, n=10), _row("MLR", "m", lv, "MC", mc, n=30),
                 _row("MPLR", "m", lv, "GC", gc, n=10), _row("ACS", "m", lv, "AM", acs, n=10, hib=True),
                 _row("TCQ", "m", lv, "ALL", tcq, hib=True)]
    t = ladder_table(_run(rows, tmp_path))
    assert [c.header for c in t.columns] == ["Dyadic leak", "Multi-party leak", "TCQ"]
    assert [r.labels[-1] for r in t.rows] == ["L0", "L1", "L2", "Δ L0→L2"]
    # without scenario_scores.jsonl: n-weighted mean of category means, ACS as 1 − ACS
    assert t.rows[0].cells[0].mean == pytest.approx((0.6 * 10 + 0.3 * 30) / 40)
    assert t.rows[0].cells[1].mean == pytest.approx((0.5 + 0.3) / 2)
    delta = t.rows[-1]
    assert delta.kind == "delta"
    assert [c.mean for c in delta.cells] == pytest.approx([(0.2 * 10 + 0.1 * 30) / 40 - 0.375, 0.1 - 0.4, 0.15])
    md = t.to_markdown()
    assert "| m | Δ L0→L2 | -0.25 | -0.30 | +0.15 |" in md
    assert "without a CI" in md


def test_ladder_delta_on_fixture_matches_its_rows(rendered):
    run, _ = rendered
    t = ladder_table(load_run(run))
    for i, r in enumerate(t.rows):
        if r.kind != "delta":
            continue
        first, last = t.rows[i - 3], t.rows[i - 1]
        assert (first.labels[-1], last.labels[-1]) == ("L0", "L2")
        for a, b, d in zip(first.cells, last.cells, r.cells):
            assert d.mean == pytest.approx(b.mean - a.mean)
    # the fixture's defenses work: leakage falls for every model
    assert all(r.cells[0].mean < 0 for r in t.rows if r.kind == "delta")


def test_several_judges_get_their_own_rows(tmp_path):
    run = load_run(make_run_dir(tmp_path / "two-judges", models=MODELS[:2], levels=("L0", "L2"), per_category=3,
                                seeds=1, judges=("judge-a", "judge-b")))
    t = main_table(run, "L0")
    assert t.label_headers == ["Model", "Judge"]
    assert sorted(tuple(r.labels) for r in t.rows) == sorted((m, j) for m in MODELS[:2] for j in ("judge-a", "judge-b"))
    for r in t.rows:  # each row reads its own judge's value
        ref = run.scores.get("CDLR", model=r.labels[0], judge=r.labels[1], condition="L0", category="CD", group="")[0]
        assert r.cells[0].mean == ref.mean
    assert "| Model | Judge | Level |" in ladder_table(run).to_markdown()
    notes = [f.note or "" for f in build_figures(run) if f.ok]
    assert notes and all("judge judge-a only" in n for n in notes)


# ---------------------------------------------------------------------------- missing data


def test_each_figure_is_also_a_vector_figure_beside_its_png(rendered):
    """Figures were PNG at 130 DPI only, and a paper wants vector figures (issue 47, item 19): each
    is written as SVG and PDF beside the PNG, drawn as paths (not an embedded bitmap), the same bytes
    whenever the same figure is written; the report itself embeds the PNG alone."""
    from xml.etree import ElementTree

    run, rep = rendered
    for name in FIGURES:
        svg, pdf = run / "figures" / f"{name}.svg", run / "figures" / f"{name}.pdf"
        root = ElementTree.parse(svg).getroot()
        assert root.tag.endswith("svg") and root.iter("{http://www.w3.org/2000/svg}path"), name
        assert not list(root.iter("{http://www.w3.org/2000/svg}image")), f"{name}.svg holds a bitmap"
        assert pdf.read_bytes().startswith(b"%PDF") and pdf.stat().st_size > 1_000, name
    assert "image/svg" not in rep.html.read_text() and ".pdf" not in rep.html.read_text()

    def vector_files() -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in (run / "figures").iterdir() if p.suffix in (".svg", ".pdf")}

    first = vector_files()
    assert len(first) == 2 * len(FIGURES)
    build_report(run)  # the same run drawn again writes the same files
    assert vector_files() == first


def test_report_without_scenarios_or_spec_skips_with_notes(rendered, tmp_path):
    src, _ = rendered
    run = tmp_path / "bare"
    run.mkdir()
    shutil.copy(src / "scores.json", run / "scores.json")
    (run / "figures").mkdir()
    for fmt in ("png", "svg", "pdf"):
        (run / "figures" / f"cd_domain_heatmap.{fmt}").write_bytes(b"stale")  # must not survive a skip
    rep = build_report(run)
    html = rep.html.read_text()
    assert not list((run / "figures").glob("cd_domain_heatmap.*"))
    assert "Not drawn — skipped: scenario_scores.jsonl is absent" in html
    assert "spec.yaml is absent" in html and "No provenance recorded" in html
    assert html.count("data:image/png;base64,") == 3


def test_report_with_sparse_scores(tmp_path):
    """Only CD, one level, no TCQ, one value missing: no crash, skips explained."""
    rows = [_row("CDLR", "a", "L0", "CD", 0.3), _row("CDLR", "b", "L0", "CD", None, n_failed=4)]
    Scores(run_id="sparse", benchmark="asb", rows=rows).write(tmp_path / "scores.json")
    rep = build_report(tmp_path)
    html = rep.html.read_text()
    assert "Leakage vs task completion quality" in html and "skipped: no model has both a TCQ value" in html
    assert "skipped: no _full/_partial split" in html
    assert "Not in this run: MLR, CULR, MPLR, HALR, CSLR, ACS." in html
    assert (tmp_path / "figures" / "level_effect.png").is_file()
    empty = tmp_path / "empty"
    empty.mkdir()
    Scores(run_id="empty", benchmark="asb").write(empty / "scores.json")
    rep = build_report(empty)
    assert "data:image/png" not in rep.html.read_text() and all(not f.ok for f in build_figures(load_run(empty)))


def test_bad_files_name_the_file(tmp_path):
    with pytest.raises(UserError, match=re.escape(f"{tmp_path / 'scores.json'}: no scores file")):
        render_report(tmp_path)
    (tmp_path / "scores.json").write_text('{"run_id": "x", "benchmark": "asb", "rows": [{"metric": 1}]}')
    with pytest.raises(UserError, match=re.escape(f"{tmp_path / 'scores.json'}: invalid scores file at 'rows.0")):
        render_report(tmp_path)
    Scores(run_id="x", benchmark="asb").write(tmp_path / "scores.json")
    (tmp_path / "scenario_scores.jsonl").write_text('{"key": "k"}\n')
    with pytest.raises(UserError, match=re.escape(f"{tmp_path / 'scenario_scores.jsonl'}:1: not a scenario score "
                                                  "record: field 'scenario'")):
        render_report(tmp_path)


# ---------------------------------------------------------------------------- CLI


def test_cli_report_prints_html_path(rendered, tmp_path):
    from localbench.cli import app

    src, _ = rendered
    run = tmp_path / "copy"
    run.mkdir()
    for name in ("scores.json", "spec.yaml", "scenario_scores.jsonl"):  # the files alone, nothing rendered
        shutil.copy(src / name, run / name)
    res = CliRunner().invoke(app, ["report", str(run), "--ci"])
    assert res.exit_code == 0, res.output
    assert res.stdout.strip() == str(run / "report.html")  # stdout: the path alone (stderr: the stage's time)
    assert re.search(r"report: .*report\.html \(\d+\.\d s\)", res.stderr)
    assert (run / "report.md").is_file() and len(list((run / "figures").glob("*.png"))) == len(FIGURES)
    line = (run / "tables" / "table2_main_L0.md").read_text().split("| qwen3-8b |")[1].splitlines()[0]
    assert re.search(r"0\.\d\d \[0\.\d\d, 0\.\d\d\]", line)


def test_cli_missing_scores_is_one_line(tmp_path):
    from localbench.cli import app

    res = CliRunner().invoke(app, ["report", str(tmp_path)])
    assert isinstance(res.exception, UserError) and str(tmp_path / "scores.json") in str(res.exception)
    p = subprocess.run([sys.executable, "-m", "localbench.cli", "report", str(tmp_path)], capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.strip() == f"error: {tmp_path / 'scores.json'}: no scores file (the score stage of a run writes it)"


def test_unscored_simulations_are_counted_by_reason(tmp_path):
    """Crashed or never-judged simulations: the Failures section lists them by reason."""
    run = make_run_dir(tmp_path / "asb-fixture", models=MODELS[:1], levels=("L0",), categories=("CD", "GC"),
                       per_category=2)
    lines = [json.loads(x) for x in (run / "scenario_scores.jsonl").read_text().splitlines()]
    lines[0]["unscored"], lines[1]["unscored"] = "simulation error", "not judged yet"
    lines[2]["unscored"] = "simulation error"
    (run / "scenario_scores.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    build_report(run)
    md = (run / "report.md").read_text()
    assert "| simulation error | 2 |" in md and "| not judged yet | 1 |" in md
    assert "Simulations whose leakage could not be measured" in (run / "report.html").read_text()


def test_comparisons_csv_holds_the_p_values_themselves(rendered):
    run, _ = rendered
    rows = list(csv.DictReader(io.StringIO((run / "tables" / "comparisons.csv").read_text())))
    small = [r for r in rows if r["p"] and float(r["p"]) < 0.001]
    assert small, "the fixture has a p-value the table shows as <0.001"
    assert all(0 < float(r["p"]) < 0.001 for r in small)  # the number, not the text "<0.001"


def test_secondary_leakage_metrics_have_their_table(rendered):
    """CULR_worst and CER are in scores.json and in a table of their own, with the rows' values."""
    run, _ = rendered
    rows = list(csv.DictReader(io.StringIO((run / "tables" / "table2b_secondary.csv").read_text())))
    data = load_run(run)
    for r in rows:
        ref = data.row("CER", r["Model"], r["Level"], "CM")
        assert ref is not None and float(r["CER"]) == pytest.approx(ref.mean)
    assert "Secondary leakage metrics" in (run / "report.md").read_text()


def test_comparisons_with_too_few_pairs_say_they_cannot_be_significant(rendered):
    """A sign-flip test over n pairs cannot go below 2 / 2^n: the table says so when n < 6."""
    import dataclasses

    from localbench.report.tables import MIN_PAIRS_FOR_ALPHA, comparisons_table

    data = load_run(rendered[0])

    def notes(n_pairs: int) -> list[str]:
        comps = [c.model_copy(update={"n_pairs": n_pairs}) for c in data.scores.comparisons]
        run = dataclasses.replace(data, scores=data.scores.model_copy(update={"comparisons": comps}))
        return comparisons_table(run).notes

    assert not any("can never reach" in n for n in notes(MIN_PAIRS_FOR_ALPHA))
    assert any("fewer than 6 pairs can never reach p < 0.05" in n for n in notes(2))


def test_one_metric_heading_several_categories_names_each_column_and_notes_its_interval(tmp_path):
    """AgentLeak's headline is ELR in every vertical (Wilson intervals): the columns say which vertical,
    and the note says Wilson, not bootstrap; a mixed table names each metric's interval."""
    from localbench.benchmarks.agentleak.design import DESIGN as AL
    from localbench.benchmarks.agentleak.scenario import VERTICALS
    from localbench.design import ALL
    from localbench.report.tables import ci_note

    rows = [_row("ELR", "m", "multi", v, 0.5) for v in VERTICALS] + [_row("TSR", "m", "multi", ALL, 0.2, hib=True)]
    run = RunData(path=tmp_path, scores=Scores(run_id="hand", benchmark="agentleak", rows=rows), design=AL)
    t = headline_table(run, "multi", pooled=("TSR",))
    assert [c.header for c in t.columns] == [f"ELR {v}" for v in VERTICALS] + ["TSR"]
    notes = " ".join(t.all_notes())
    assert "Wilson score interval" in notes and "bootstrap" not in notes and "TSR is pooled" in notes
    mixed = ci_note(run, "pm", ["ELR", "WLS"])
    assert "Wilson score interval over simulations for ELR" in mixed
    assert "bootstrap CI over scenarios (1000 resamples) for WLS" in mixed
