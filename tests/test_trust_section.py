"""The run report's "How far to trust these numbers" (issue 45 item 3): a planted run (known leaks)
rejudged with a synthetic judge of known FPR/FNR, measured by a gold eval, gets corrected headline
numbers whose intervals hold the planted truth, in the written report; a judge no eval measured is
a warning, its numbers are marked in the report and in `compare`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from localbench.cli import app
from localbench.errors import UserError
from localbench.judging.trust import eval_dirs
from localbench.report.tables import UNMEASURED_MARK
from localbench.scores import UNMEASURED

NOISY, UNMEASURED_JUDGE = "noisy:0.1,0.2", "noisy:0.2,0.1"


def _cli(*args: str) -> str:
    res = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """A planted run rejudged by a measured noisy judge, an oracle (the truth) and an unmeasured one."""
    from localbench.benchmarks.asb.loaders import load_scenarios
    from localbench.benchmarks.asb.planting import build_gold, write_planted_run
    from localbench.judging.gold import write_gold

    tmp = tmp_path_factory.mktemp("trust")
    gold = write_gold(tmp / "gold.jsonl", build_gold(load_scenarios("builtin", ["CD", "MC", "CU"], limit=2).scenarios,
                                                     seed=0))
    evals = tmp / "evals"  # a folder of eval directories: the spec value's third form
    _cli("judges", "eval", "--judge", NOISY, "--judge", "oracle", "--gold", str(gold), "--out", str(evals / "ev"))
    run = write_planted_run(tmp / "runs" / "planted", "builtin", {"low": 0.3, "high": 0.7}, seed=3)
    _cli("judges", "rejudge", str(run), "--judge", NOISY, "--judge", "oracle", "--judge-eval", str(evals))
    _cli("judges", "rejudge", str(run), "--judge", UNMEASURED_JUDGE)  # no eval: never measured
    return run, evals / "ev"


def _scores(run: Path, judge: str) -> dict:
    return json.loads((run / "judges" / judge / "scores.json").read_text())


def test_corrected_headline_numbers_hold_the_planted_truth_in_the_report(planted):
    run, ev = planted
    trust = _scores(run, NOISY)["trust"]
    truth = {(m["model"], m["category"]): m["leaked"] / m["units"] for m in _scores(run, "oracle")["trust"]["metrics"]}
    rel = next(j for j in json.loads((ev / "reliability.json").read_text())["judges"] if j["judge"] == NOISY)
    leak = rel["gold"]["leak"]
    [judge] = trust["judges"]
    assert judge["measured"] and judge["judge"] == "privacy" and judge["verdict"] == rel["verdict"]["grade"]
    assert judge["fpr"]["estimate"] == pytest.approx(leak["fpr"]["estimate"]) and judge["gold"] == "constructed"
    corrected = [m for m in trust["metrics"] if m["status"] == "corrected"]
    assert len(corrected) >= 3 and {m["status"] for m in trust["metrics"]} <= {"corrected", "not identified"}
    f, r = leak["fp"] / leak["n_neg"], leak["fn"] / leak["n_pos"]
    for m in corrected:
        c = m["corrected"]
        assert c["low"] <= truth[(m["model"], m["category"])] <= c["high"], m  # the planted truth is inside
        # Rogan-Gladen with the eval's error rates, not the raw share
        assert c["estimate"] == pytest.approx(min(max((m["leaked"] / m["units"] - f) / (1 - f - r), 0), 1))
    _cli("report", str(run / "judges" / NOISY))
    md = (run / "judges" / NOISY / "report.md").read_text()
    section = md.split("## How far to trust these numbers", 1)[1].split("\n## ", 1)[0]
    assert md.index("**Headline metrics by model and privacy level**") < md.index("## How far to trust these numbers")
    assert f"| privacy | {NOISY} | measured | {judge['verdict']} |" in section
    for m in corrected:
        c = m["corrected"]
        assert f"| {c['estimate']:.2f} [{c['low']:.2f}, {c['high']:.2f}] |" in section
    html = (run / "judges" / NOISY / "report.html").read_text()
    assert 'id="trust"' in html and f"{corrected[0]['corrected']['estimate']:.2f} [" in html


def test_an_unmeasured_judge_is_warned_of_and_its_numbers_are_marked(planted, tmp_path):
    run, _ = planted
    scores = _scores(run, UNMEASURED_JUDGE)
    [warn] = [w for w in scores["judge_warnings"] if w["pattern"] == UNMEASURED]
    assert warn["judge_model"] == UNMEASURED_JUDGE and {"CDLR", "MLR", "CULR"} <= set(warn["metrics"])
    assert not scores["trust"]["judges"][0]["measured"]
    assert {m["status"] for m in scores["trust"]["metrics"]} == {"unmeasured"}
    out = run / "judges" / UNMEASURED_JUDGE
    _cli("report", str(out))
    md = (out / "report.md").read_text()
    lead = md.split("**Headline metrics by model and privacy level**", 1)[1].split("\n\n", 2)[1]
    cells = [c for line in lead.splitlines()[2:] for c in line.split("|")[3:-1]]
    assert cells and all(c.strip().endswith(UNMEASURED_MARK) for c in cells)
    section = md.split("## How far to trust these numbers", 1)[1].split("\n## ", 1)[0]
    assert "**Warning:** privacy judge (noisy:0.2,0.1): never measured against gold" in section
    assert f"NOT MEASURED {UNMEASURED_MARK}" in section and f"unmeasured {UNMEASURED_MARK}" in section
    assert "a judge never measured against gold (privacy (noisy:0.2,0.1)" in md  # the mark's note
    # the ladder's pooled leak is that judge's numbers too
    ladder = md.split("**Privacy ladder: leakage and utility by level**", 1)[1].split("\n\n", 2)[1].splitlines()
    column = ladder[0].split("|").index(" Dyadic leak ↓ ")
    pooled = [line.split("|")[column] for line in ladder[2:] if "Δ" not in line]
    assert pooled and all(c.strip().endswith(UNMEASURED_MARK) for c in pooled), ladder
    # compare: the headline cell carries the mark, the corrected table says unmeasured
    _cli("compare", str(out), str(run / "judges" / NOISY), "--out", str(tmp_path / "cmp"), "--no-view")
    cmp = (tmp_path / "cmp" / "compare.md").read_text()
    head = cmp.split("**Headline metric by model and benchmark**", 1)[1].split("\n\n", 2)[1].splitlines()[2:]
    assert len(head) == 4 and all((UNMEASURED_MARK in line) == (UNMEASURED_JUDGE in line) for line in head)
    corrected = cmp.split("headline metrics corrected for their judge's measured error rates", 1)[1].split("\n\n", 2)[1]
    rows = corrected.splitlines()[2:]
    assert all(("| unmeasured |" in line) == (UNMEASURED_JUDGE in line) for line in rows)
    assert any(line.count("[") == 2 for line in rows if NOISY in line), corrected  # measured: raw and corrected


def test_judge_eval_names_one_eval_a_list_or_a_folder_of_them(planted, tmp_path):
    _, ev = planted
    assert eval_dirs(str(ev)) == [ev] == eval_dirs(str(ev.parent)) == eval_dirs([str(ev), str(ev)])
    with pytest.raises(UserError, match=f"judge_eval: {tmp_path}"):
        eval_dirs(str(tmp_path))


def test_an_eval_names_the_judge_it_measured_and_its_gold(planted, tmp_path):
    """eval.json's bench_judge (issue 45 item 1) and gold_origin (item 2) decide which judge of a run
    an eval measured and what its gold is; an eval of another benchmark measures nothing here."""
    import shutil

    from localbench.judging.trust import read_measurements

    _, ev = planted
    pairs = shutil.copytree(ev, tmp_path / "pairs")
    cfg = json.loads((pairs / "eval.json").read_text())
    (pairs / "eval.json").write_text(json.dumps({**cfg, "bench_judge": "privacy_pairs",
                                                 "gold_origin": "real-transcript gold"}))
    got = read_measurements([ev, pairs], "asb", "privacy")
    assert {k: m.gold for k, m in got.items()} == {("privacy", NOISY): "constructed", ("privacy", "oracle"): "constructed",
                                                   ("privacy_pairs", NOISY): "real-transcript",
                                                   ("privacy_pairs", "oracle"): "real-transcript"}
    assert read_measurements([ev], "agentleak", "leak") == {}
