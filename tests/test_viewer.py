"""The run viewer and the report, clicked through in a real browser (Debian's chromium).

The run is tests/golden/asb-v1-run: the embedded default (SmolLM2-135M as agent and judge) as it was
recorded, so the labels are a real small judge's. `localbench report` re-renders its report and
writes its viewer; the tests filter, open a simulation, follow a label to its message, compare two
simulations and follow a report cell to the simulations behind it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from browser import page

RECORDED = Path(__file__).resolve().parent / "golden" / "asb-v1-run"
pytestmark = pytest.mark.timeout(300)


def _cli(*args: str) -> subprocess.CompletedProcess:
    r = subprocess.run([sys.executable, "-m", "localbench.cli", *args], capture_output=True, text=True, timeout=240,
                       env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert r.returncode == 0, r.stderr[-2000:]
    return r


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("viewer") / "asb-d9c285b0e4"
    shutil.copytree(RECORDED, d)
    r = _cli("report", str(d))
    assert "viewer: 14 simulations of 1 run(s)" in r.stderr
    return d


def _uri(p: Path, fragment: str = "") -> str:
    return p.resolve().as_uri() + fragment


def test_view_command_writes_the_viewer_without_opening(run, tmp_path):
    r = _cli("view", str(run), "--out", str(tmp_path / "v"), "--no-open")
    assert "viewer: 14 simulations of 1 run(s)" in r.stdout
    assert {p.name for p in (tmp_path / "v").iterdir()} == {"index.html", "app.js", "style.css", "data"}
    assert len(list((tmp_path / "v" / "data" / "sims").glob("*.js"))) == 14


def test_filter_open_follow_a_label_and_compare(run):
    with page() as pg:
        pg.goto(_uri(run / "view" / "index.html"))
        assert pg.text_content("#count").startswith("14 of 14 simulations shown")
        leaked = int(pg.text_content("#count").split(" · ")[1].split()[0])
        assert 0 < leaked < 14  # the recorded judge found leaks in some simulations, not all
        pg.select_option("select[data-filter=leaked]", "yes")
        assert pg.text_content("#count").startswith(f"{leaked} of 14")
        assert pg.locator("#list tbody tr").count() == leaked == pg.locator("#list tbody tr.leaked").count()
        pg.select_option("select[data-filter=category]", "GC")
        assert pg.text_content("#count").startswith("2 of 14")
        pg.locator("#list tbody tr a").first.click()
        pg.wait_for_selector("section.sim")
        assert pg.locator("table.labels .badge.full").count() > 0  # a full leak, labelled by the model
        carrier = pg.locator("li.msg.carried-full").first
        assert carrier.count() == 1 and "carries a full leak" in carrier.text_content()
        link = pg.locator("table.labels a.msglink").first
        target = link.text_content().lstrip("#")
        link.click()
        assert "focus" in pg.get_attribute(f"li.msg[id$='-{target}']", "class")
        assert pg.locator("table.items tbody tr").count() == 4  # every participant's private item
        assert "Must not reach" in pg.text_content("table.items thead")
        other = pg.locator("#compare-with option").nth(1).get_attribute("value")
        pg.select_option("#compare-with", other)
        pg.wait_for_selector(".side-by-side section.sim >> nth=1")
        levels = [x.text_content() for x in pg.locator(".side-by-side .facts dd:nth-of-type(3)").all()]
        assert sorted(levels) == ["L0", "L2"]
        assert pg.problems == []


def test_a_report_cell_opens_the_simulations_behind_it(run):
    with page() as pg:
        pg.goto(_uri(run / "report.html"))
        # the first screen (1400×900) shows what was run and the headline table
        lead = pg.locator("#findings table.results")
        box = lead.bounding_box()
        assert box is not None and box["y"] + box["height"] < 900
        assert "14 simulations" in pg.text_content("#what-ran")
        cell = pg.locator("#tab-headline a.cell").first  # CDLR of smollm2-135m at L0
        assert "category=CD" in cell.get_attribute("href") and "condition=L0" in cell.get_attribute("href")
        cell.click()
        pg.wait_for_selector("#list")
        assert pg.text_content("#count").startswith("1 of 14 simulations shown")
        assert pg.locator("#list tbody td:nth-child(3)").all_text_contents() == ["CD"]
        pg.locator("a", has_text="report").first.click()  # and back
        pg.wait_for_selector("#findings")
        assert pg.problems == []


def test_provenance_is_last_and_collapsed(run):
    html = (run / "report.html").read_text()
    assert html.index('id="findings"') < html.index('id="tables"') < html.index('id="provenance"')
    assert html.index('id="provenance"') > html.index('id="glossary"')
    facts = html[html.index('id="key-facts"'):html.index("<details>")]
    assert "agent model" in facts and "smollm2-135m" in facts and "xgrammar" in facts and "rubrics" in facts
    assert html.count("<details>") >= 4  # each role and section folded away


HOSTILE = ['<script>window.__pwned=1</script>', '"><img src=x onerror="window.__pwned=2">',
           "javascript:window.__pwned=3"]


def test_untrusted_text_is_shown_never_run(run, tmp_path):
    """Scenario text, model output and judge evidence carrying markup and a javascript: URL."""
    import yaml

    src = tmp_path / "scenarios"
    shutil.copytree(Path(__file__).resolve().parent.parent / "scenarios" / "asb-mini" / "cd", src / "cd")
    for f in (src / "cd").glob("*.yaml"):
        doc = yaml.safe_load(f.read_text())
        doc["task"] = HOSTILE[0] + doc["task"]
        doc["people"][0]["name"] = HOSTILE[1]
        doc["items"][0]["text"] = HOSTILE[2] + " " + HOSTILE[0]
        f.write_text(yaml.safe_dump(doc, allow_unicode=True))
    bad = tmp_path / "asb-hostile"
    shutil.copytree(run, bad, ignore=shutil.ignore_patterns("view", "figures", "tables", "report.*"))
    spec = yaml.safe_load((bad / "spec.yaml").read_text())
    spec["spec"].update(scenarios=str(src), categories=["CD"])
    (bad / "spec.yaml").write_text(yaml.safe_dump(spec, allow_unicode=True))
    lines = [json.loads(x) for x in (bad / "transcripts.jsonl").read_text().splitlines()]
    keep = [t for t in lines if t["category"] == "CD"]
    for t in keep:
        t["model"] = "m" + HOSTILE[0]  # a model name reaches the report's tables
        for e in t["entries"]:
            e["content"] = HOSTILE[0] + HOSTILE[1] + e["content"]
    (bad / "transcripts.jsonl").write_text("".join(json.dumps(t) + "\n" for t in keep))
    judged = [json.loads(x) for x in (bad / "judgments.jsonl").read_text().splitlines()]
    judged = [j for j in judged if j["category"] == "CD"]
    for j in judged:
        if j["judge"] == "privacy" and j["label"]:
            j["label"]["evidence"] = {k: HOSTILE[1] for k in j["label"]["levels"]}
    (bad / "judgments.jsonl").write_text("".join(json.dumps(j) + "\n" for j in judged))
    _cli("score", str(bad))
    _cli("report", str(bad))
    sim = bad / "view" / "data" / "sims" / "0.js"  # and a hostile data file (a plug-in's images)
    text = sim.read_text()
    sim.write_text(text.replace('"images":[]', '"images":["javascript:window.__pwned=3","x\\" onerror=\\"window.__pwned=4"]', 1))
    with page() as pg:
        for url in (_uri(bad / "view" / "index.html"), _uri(bad / "view" / "index.html", "#sim/0"),
                    _uri(bad / "report.html")):
            pg.goto(url)
            pg.wait_for_timeout(300)
            assert pg.evaluate("window.__pwned") is None, url
        pg.goto(_uri(bad / "view" / "index.html", "#sim/0"))
        pg.wait_for_selector("section.sim")
        shown = pg.text_content("section.sim")
        assert HOSTILE[0] in shown and HOSTILE[1] in shown and HOSTILE[2] in shown  # shown as text
        assert pg.locator("section.sim script, section.sim img[onerror]").count() == 0
        assert all(not (i.get_attribute("src") or "").startswith("javascript:") for i in pg.locator("img").all())
        assert [p for p in pg.problems if "dialog" in p] == []
    md = (bad / "report.md").read_text()
    assert "m&lt;script&gt;" in md and "<script>" not in md and "<img" not in md


def test_figures_fit_their_frame(run):
    """No title or axis label runs past the figure's edge (the CD heatmap's title was cut)."""
    from localbench.report import load_run
    from localbench.report.render import build_figures

    for f in build_figures(load_run(run)):
        if f.figure is None:
            continue
        f.figure.canvas.draw()
        renderer = f.figure.canvas.get_renderer()
        width, height = f.figure.bbox.width, f.figure.bbox.height
        texts = list(f.figure.texts) + [t for ax in f.figure.axes for t in (ax.title, ax.xaxis.label, ax.yaxis.label)]
        for t in texts:
            if not t.get_text() or not t.get_visible():
                continue
            b = t.get_window_extent(renderer)
            assert b.x0 >= -1 and b.x1 <= width + 1 and b.y0 >= -1 and b.y1 <= height + 1, (f.name, t.get_text())
        assert f.caption and f.alt, f.name


def test_judge_warnings_come_first_and_mark_the_numbers_they_touch(tmp_path):
    """The recorded run's 135M judge is degenerate: the report says so above its tables, and the
    cells computed from it carry ‡, instead of presenting them as findings."""
    run = tmp_path / "asb-d9c285b0e4"
    shutil.copytree(RECORDED, run)
    _cli("score", str(run))
    _cli("report", str(run))
    html = (run / "report.html").read_text()
    warnings = html[html.index('id="judge-warnings"'):html.index('id="findings"')]
    assert "behaviour judge (smollm2-135m) gave the same answer in all 14 simulations" in warnings
    assert "TCQ 1.0 but not completed" in warnings
    lead = html[html.index('id="tab-headline"'):html.index("</table>", html.index('id="tab-headline"'))]
    assert lead.count("‡") >= 5  # IAS (one level has no value), TCQ and Task% at both levels
    # privacy judge not degenerate, but self-judging (‡) and never measured against gold (°)
    assert "CDLR" in lead and "1.00 (n = 1)‡°</a>" in lead
    md = (run / "report.md").read_text()
    assert md.index("**Judge warnings**") < md.index("**Headline metrics by model and privacy level**")
