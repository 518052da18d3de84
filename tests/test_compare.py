"""`localbench compare`: paired statistics with known answers across real runs made through the CLI with
no model (AgentLeak's scripted oracle and planted leaker, SopriBench's reference attackers,
AgentSocialBench's planted runs), every table
and figure written, and the marks a cell carries from the run behind it (self-judged, judge warning)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from localbench.stats import rank_intervals


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localbench.cli", *args], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _run(out: Path, run_id: str, *args: str) -> Path:
    r = _cli("run", *args, "--out", str(out), "--run-id", run_id, "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    return out / run_id


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Four runs, no model: AgentLeak's oracle and its planted C2 leaker (multi-agent, 4 scenarios per
    vertical), SopriBench's oracle and none attackers (8 users, the exact judge)."""
    out = tmp_path_factory.mktemp("runs")
    agentleak = ("--benchmark", "agentleak", "--judge", "none", "--limit", "4", "--levels", "multi")
    sopri = ("--benchmark", "sopri", "--judge", "exact", "--agent", "tiny-random", "--limit", "8")
    return {"oracle": _run(out, "oracle", *agentleak, "--agent", "oracle"),
            "leaker": _run(out, "leaker", *agentleak, "--agent", "oracle-leaks-C2"),
            "s-oracle": _run(out, "s-oracle", *sopri, "--attackers", "oracle"),
            "s-none": _run(out, "s-none", *sopri, "--attackers", "none")}


def _pooled(run: Path, metric: str, condition: str) -> float:
    rows = json.loads((run / "scores.json").read_text())["rows"]
    return next(r["mean"] for r in rows if r["metric"] == metric and r["category"] == "ALL"
                and r["condition"] == condition and not r.get("group"))


def _comparisons(out: Path, bench: str) -> list[dict]:
    with open(out / "tables" / f"{bench}_comparisons.csv") as f:
        return [r for r in csv.DictReader(f) if r["Category"] == "ALL"]


def _compare(out: Path, *runs: Path, view: bool = False) -> subprocess.CompletedProcess:
    r = _cli("compare", *map(str, runs), "--out", str(out), *([] if view else ["--no-view"]))
    assert r.returncode == 0, r.stderr[-3000:]
    return r


def _copy(run: Path, dest: Path) -> Path:
    shutil.copytree(run, dest, ignore=shutil.ignore_patterns("view", "report.*", "tables", "figures"))
    return dest


def test_identical_transcripts_differ_by_zero_with_p_one(runs, tmp_path):
    twin = _copy(runs["leaker"], tmp_path / "twin")
    _compare(tmp_path / "out", runs["leaker"], twin)
    (row,) = _comparisons(tmp_path / "out", "agentleak")
    assert float(row["Δ (b − a)"]) == 0.0 and float(row["p"]) == 1.0, row
    assert row["a → b"] == "oracle-leaks-C2 (leaker) → oracle-leaks-C2 (twin)"  # same preset: told apart by run id


def test_a_planted_leaker_differs_from_the_oracle_by_its_planted_rate(runs, tmp_path):
    """AgentLeak's planted leaker against the reference agent: Δ is the leaker's own ELR minus the oracle's
    (each from its run's scores.json), positive, and significant after Holm (McNemar, the design's test)."""
    out = tmp_path / "out"
    r = _compare(out, runs["oracle"], runs["leaker"])
    (row,) = _comparisons(out, "agentleak")
    planted = _pooled(runs["leaker"], "ELR", "multi") - _pooled(runs["oracle"], "ELR", "multi")
    assert planted > 0
    assert row["a → b"] == "oracle → oracle-leaks-C2" and float(row["Δ (b − a)"]) == pytest.approx(planted)
    assert float(row["Δ (b − a)_low"]) > 0 and float(row["p (Holm)"]) < 0.05 and row["sig."] == "**", row
    assert "McNemar" in (out / "tables" / "agentleak_comparisons.md").read_text()
    ranks = (out / "tables" / "agentleak_ranks.md").read_text()
    assert "| oracle | 1 [1, 1] |" in ranks and "| oracle-leaks-C2 | 2 [2, 2] |" in ranks
    assert "| oracle |" in r.stdout and "AgentLeak ELR · multi" in r.stdout  # the headline table is printed


def test_sopri_oracle_against_none_differs_by_the_whole_scale(runs, tmp_path):
    """SopriBench's reference attackers (two runs of one preset, disjoint attackers): compared as two
    conditions of one model, Δ = none's PES − oracle's, negative, significant (sign-flip over users)."""
    out = tmp_path / "out"
    _compare(out, runs["s-oracle"], runs["s-none"])
    (row,) = _comparisons(out, "sopri")
    planted = _pooled(runs["s-none"], "PES", "none") - _pooled(runs["s-oracle"], "PES", "oracle")
    assert planted < 0
    assert row["Fixed"] == "tiny-random" and row["a → b"] == "oracle → none"
    assert float(row["Δ (b − a)"]) == pytest.approx(planted) and float(row["p (Holm)"]) < 0.05, row


def test_compare_writes_every_table_and_figure(runs, tmp_path):
    out = tmp_path / "out"
    _compare(out, *runs.values(), view=True)
    tables = ["headline"] + [f"{b}_{t}" for b in ("agentleak", "sopri")
                             for t in ("metrics", "categories", "ranks", "comparisons")]
    for t in tables:
        for ext in ("md", "tex", "csv"):
            assert (out / "tables" / f"{t}.{ext}").stat().st_size > 0, (t, ext)
        assert f'id="tab-{t}"' in (out / "compare.html").read_text()
    assert "\\toprule" in (out / "tables" / "headline.tex").read_text()
    for fig in ("headline", "ranks"):
        for ext in ("png", "svg", "pdf"):
            assert (out / "figures" / f"{fig}.{ext}").stat().st_size > 0, (fig, ext)
    page = (out / "compare.html").read_text()
    assert (out / "view" / "index.html").is_file()
    assert 'href="view/index.html#list?model=oracle-leaks-C2&amp;condition=multi&amp;run=leaker"' in page
    head = (out / "tables" / "headline.md").read_text()
    assert "SopriBench PES · oracle" in head and "AgentLeak ELR · multi" in head
    assert "§" not in head and "‡" not in head  # no run here is self-judged or warned


def test_self_judged_and_warned_runs_are_marked_in_every_table(runs, tmp_path):
    me = _copy(runs["oracle"], tmp_path / "me")
    spec = yaml.safe_load((me / "spec.yaml").read_text())
    spec["resolved_models"]["judge"] = spec["resolved_models"]["agent"]  # the agent judged itself
    (me / "spec.yaml").write_text(yaml.safe_dump(spec))
    plan = json.loads((me / "plan.json").read_text())  # and its run plan says so (compare reads it first)
    plan["models"]["judge"] = plan["models"]["agent"]
    (me / "plan.json").write_text(json.dumps(plan))
    warned = _copy(runs["leaker"], tmp_path / "warned")
    scores = json.loads((warned / "scores.json").read_text())
    scores["judge_warnings"] = [{"judge": "leak", "judge_model": "none", "pattern": "constant", "message": "constant",
                                 "count": 1, "total": 1, "metrics": ["ELR"]}]
    (warned / "scores.json").write_text(json.dumps(scores))
    out = tmp_path / "out"
    _compare(out, me, warned)
    for t in ("headline", "agentleak_metrics", "agentleak_categories", "agentleak_ranks"):
        text = (out / "tables" / f"{t}.md").read_text()
        own = [x for x in text.splitlines() if x.startswith("| oracle |")]
        other = [x for x in text.splitlines() if x.startswith("| oracle-leaks-C2 |")]
        assert own and all("§" in x for x in own) and not any("§" in x for x in other), (t, text)
        assert other and any("‡" in x for x in other) and not any("‡" in x for x in own), (t, text)
        assert "self-judged" in text and "judge with a warning" in text, t
    comp = (out / "tables" / "agentleak_comparisons.md").read_text()
    row = next(x for x in comp.splitlines() if x.startswith("| ELR | ALL | multi | oracle → oracle-leaks-C2 |"))
    assert "§" in row and "‡" in row, row  # a difference carries the marks of both sides


@pytest.fixture(scope="module")
def asb_planted(tmp_path_factory) -> dict[str, Path]:
    """AgentSocialBench's planted runs (`judges plant-run`: no model, each item leaked with a known
    share), all on the same scenarios and plant seed, labelled by the oracle judge (the construction's
    own labels: `judges rejudge --judges oracle`): 0.2 against 0.7, and two runs planted at 0.5."""
    from typer.testing import CliRunner

    from localbench.cli import app

    out = tmp_path_factory.mktemp("planted")
    runs = {}
    for name, share in {"low": 0.2, "high": 0.7, "twin-a": 0.5, "twin-b": 0.5}.items():
        for args in (["judges", "plant-run", "--out", str(out / name), "--models", f"planted-{name}:{share}", "--seed", "1"],
                     ["judges", "rejudge", str(out / name), "--judges", "oracle"]):
            r = CliRunner().invoke(app, args)
            assert r.exit_code == 0, (args, r.output, r.exception)
        runs[name] = out / name / "judges" / "oracle"  # the run as the oracle judge scored it
    return runs


def _shares(row: dict) -> tuple[float, float]:
    a, b = (name.removeprefix("planted-") for name in row["a → b"].split(" → "))
    share = {"low": 0.2, "high": 0.7, "twin-a": 0.5, "twin-b": 0.5}
    return share[a], share[b]


def test_asb_planted_runs_differ_by_their_planted_shares(asb_planted, tmp_path):
    """Planted at 0.2 and 0.7: the pooled leak rate's paired difference is the planted 0.5, with its
    sign, its interval clear of zero and significant after Holm; per category, Δ is the two runs' own
    scores apart."""
    out = tmp_path / "out"
    _compare(out, asb_planted["low"], asb_planted["high"])
    rows = _comparisons(out, "asb")
    pooled = next(r for r in rows if r["Metric"] == "leak rate")
    a, b = _shares(pooled)
    delta = float(pooled["Δ (b − a)"])
    assert abs(delta - (b - a)) < 0.1 and (delta > 0) == (b > a), pooled
    low, high = float(pooled["Δ (b − a)_low"]), float(pooled["Δ (b − a)_high"])
    assert (low > 0 if b > a else high < 0) and float(pooled["p (Holm)"]) < 0.05 and pooled["sig."], pooled
    with open(out / "tables" / "asb_comparisons.csv") as f:
        per_category = [r for r in csv.DictReader(f) if r["Category"] != "ALL"]
    name = {0.2: "low", 0.7: "high"}
    for r in per_category:
        own = {k: _metric(asb_planted[name[s]], r["Metric"], r["Category"]) for k, s in zip("ab", _shares(r))}
        assert float(r["Δ (b − a)"]) == pytest.approx(own["b"] - own["a"]), r


def test_asb_runs_planted_alike_differ_by_about_zero_not_significantly(asb_planted, tmp_path):
    """Both planted at 0.5 (their own draws: the plant seeds each run's items by its model's name):
    Δ is chance alone, well under the 0.5 a planted difference makes (six scenario pairs, so about
    ±0.2), its interval holds zero and it is not significant."""
    out = tmp_path / "out"
    _compare(out, asb_planted["twin-a"], asb_planted["twin-b"])
    pooled = next(r for r in _comparisons(out, "asb") if r["Metric"] == "leak rate")
    assert abs(float(pooled["Δ (b − a)"])) < 0.25, pooled
    assert float(pooled["Δ (b − a)_low"]) < 0 < float(pooled["Δ (b − a)_high"]), pooled
    assert float(pooled["p (Holm)"]) >= 0.05 and not pooled["sig."], pooled


def _metric(run: Path, metric: str, category: str) -> float:
    rows = json.loads((run / "scores.json").read_text())["rows"]
    return next(r["mean"] for r in rows if r["metric"] == metric and r["category"] == category and not r.get("group"))


def test_rank_intervals_know_a_clear_order_and_a_tie():
    clear = rank_intervals([[0.0, 0.5, 1.0]] * 20 + [[0.1, 0.6, 0.9]] * 20)
    assert [(c.estimate, c.low, c.high) for c in clear] == [(1, 1, 1), (2, 2, 2), (3, 3, 3)]
    tie = rank_intervals([[0.0, 0.0], [1.0, 1.0]], higher_is_better=True)
    assert [(c.estimate, c.low, c.high) for c in tie] == [(1, 1, 1), (1, 1, 1)]
    flip = rank_intervals([[1.0, 0.0], [0.0, 1.0]] * 5)
    assert all(c.low == 1 and c.high == 2 for c in flip)
