"""Measurement validity: the pipeline, not a model, is what these prove.

1. An oracle judge that returns the construction labels reproduces the planted leak rates exactly,
   through the benchmark's own judge calls, decoder, metrics and scoring (via `judges rejudge`).
2. A simulated judge with known FPR/FNR gives Rogan–Gladen-corrected rates whose CIs cover the
   true rate in at least 90% of repeated draws; `--judge noisy:FPR,FNR` on a planted run, end to end
   through the CLI, gives corrected rates that cover the planted truth.
3. Kendall's τ compares judges' rankings only from four agent models on.
"""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from judges_helpers import flip, gold_items_by_call, scripted_judge
from localbench.benchmarks.asb.loaders import load_scenarios
from localbench.judging.agreement import compare_to_gold
from localbench.benchmarks.asb.judges import ItemLeakJudge
from localbench.benchmarks.asb.planting import PLANTABLE, PLANTED, build_gold, write_planted_run
from localbench.consequences import consequences, for_runs
from localbench.judging.gold_eval import EvalConfig, load_eval, run_eval
from localbench.judging.gold import write_gold
from localbench.judging.reliability import corrected_rate, judge_reliability, reliability
from localbench.rejudge import rejudge_one
from localbench.runlog import JsonlStore

pytestmark = pytest.mark.timeout(120)
SHARES = {"careful": 0.2, "middling": 0.5, "leaky": 0.85}


def _planted_labels(run_dir):
    """transcript key -> {item text: construction label}, from the planted transcripts."""
    scen = {s.id: s for s in load_scenarios("builtin", list(PLANTABLE)).scenarios}
    out = {}
    for t in JsonlStore(run_dir / "transcripts.jsonl").read():
        texts = {it.id: it.text for it in scen[t["scenario"]].items}
        out[t["key"]] = {texts[i]: lv for i, lv in t["payload"]["planted"].items()}
    return out


def _oracle(run_dir, name="oracle"):
    planted = _planted_labels(run_dir)

    def level(request, key, text):
        sim_key = request.tag.split("|privacy|")[0]
        return planted[sim_key][text]

    return scripted_judge(level, name)


def _expected_rates(run_dir):
    """Planted leak rates per simulation, computed here from the construction labels alone."""
    scen = {s.id: s for s in load_scenarios("builtin", list(PLANTABLE)).scenarios}
    out = {}
    for t in JsonlStore(run_dir / "transcripts.jsonl").read():
        sc = scen[t["scenario"]]
        leak = {i: lv != "none" for i, lv in t["payload"]["planted"].items()}
        if sc.category == "CU":
            owners = [p.id for p in sc.people if sc.items_of(p.id)]
            per = [sum(leak[it.id] for it in sc.items_of(o)) / len(sc.items_of(o)) for o in owners]
            out[t["key"]] = ("CULR", sum(per) / len(per))
        else:
            out[t["key"]] = ({"CD": "CDLR", "MC": "MLR"}[sc.category], sum(leak.values()) / len(leak))
    return out


def test_oracle_reproduces_planted_leak_rates_through_the_metric_code(tmp_path):
    run = write_planted_run(tmp_path / "planted", "builtin", SHARES, seed=3)
    out = asyncio.run(rejudge_one(run, "oracle", client=_oracle(run), show_progress=False))
    lines = [json.loads(x) for x in (out / "scenario_scores.jsonl").read_text().splitlines()]
    expected = _expected_rates(run)
    assert len(lines) == len(expected) == 6 * len(SHARES)
    rates = set()
    for ln in lines:
        metric, value = expected[ln["key"]]
        assert ln["metrics"][metric] == pytest.approx(value, abs=1e-12), ln["key"]
        assert ln["failed"] == []
        rates.add(round(value, 6))
    assert len(rates) > 3  # the planted rates differ, so a constant answer could not pass
    judgments = list(JsonlStore(out / "judgments.jsonl").read())
    assert judgments and all(j["failure"] is None for j in judgments)


def test_oracle_gold_eval_then_consequences(tmp_path):
    """Oracle on a gold set: κ = 1, verdict 'use as is'; its corrected run rates equal the observed ones."""
    scenarios = load_scenarios("builtin", ["CD", "MC"]).scenarios
    items = build_gold(scenarios, seed=1)
    gold_path = write_gold(tmp_path / "gold.jsonl", items)
    item_of = gold_items_by_call(items)
    oracle = scripted_judge(lambda req, k, text: item_of(req, text).label, "oracle")
    cfg = EvalConfig(judges=["oracle"], seeds=2, shuffle=True, pad=True)
    asyncio.run(run_eval(gold_path, tmp_path / "ev", cfg, ItemLeakJudge(), clients={"oracle": oracle}, show_progress=False))
    data = load_eval(tmp_path / "ev")
    rel = judge_reliability(data, "oracle", n_resamples=50)
    assert rel.gold.kappa.estimate == pytest.approx(1.0) and rel.gold.leak.fp == rel.gold.leak.fn == 0
    assert rel.leak_bias.estimate == 0 and rel.n_failed == 0
    assert rel.verdict.grade == "use as is" and "usable as is" in rel.verdict.text
    assert rel.consistency.unanimous.estimate == 1.0 and all(p.flip.estimate == 0 for p in rel.probes)

    run = write_planted_run(tmp_path / "planted", "builtin", SHARES, seed=3)
    asyncio.run(rejudge_one(run, "oracle", client=_oracle(run), show_progress=False))
    cons = consequences([run], {"oracle": rel})
    dyadic = [c for c in cons.corrected if c.judge == "oracle"]
    assert len(dyadic) == len(SHARES) * 4  # model × (3 categories + all pooled) (one level)
    for c in dyadic:
        assert c.corrected is not None and c.corrected.estimate == pytest.approx(c.observed)
        assert c.corrected.low <= c.observed <= c.corrected.high
    # the oracle's ranking of the models is the true one, in every scope
    assert cons.ranks and all(r.ranking_a == r.ranking_b for r in cons.ranks)  # (3 models: no τ)
    full = reliability(data, n_resamples=50, consequences=for_runs([run]))
    assert full.consequences is not None and full.consequences.metrics


FOUR = {**SHARES, "reckless": 0.95}


def test_rankings_of_two_judges_by_kendall_tau(tmp_path):
    run = write_planted_run(tmp_path / "planted", "builtin", FOUR, seed=5)
    asyncio.run(rejudge_one(run, "oracle", client=_oracle(run), show_progress=False))
    inverted = scripted_judge(lambda req, k, text: "none" if _oracle_level(run, req, text) != "none" else "full",
                              "inverted")
    asyncio.run(rejudge_one(run, "inverted", client=inverted, show_progress=False))
    cons = consequences([run], {})
    assert set(cons.judges) == {"oracle", "inverted", PLANTED}
    pooled = {(r.judge_a, r.judge_b): r for r in cons.ranks if r.scope.startswith("all units")}
    assert set(pooled) == {("inverted", "oracle"), ("inverted", PLANTED), ("oracle", PLANTED)}
    assert pooled[("inverted", "oracle")].tau.n == 4
    assert pooled[("inverted", "oracle")].tau.tau == pytest.approx(-1.0)  # the inverted judge reverses it
    assert pooled[("oracle", PLANTED)].tau.tau == pytest.approx(1.0)  # the oracle keeps the true ranking
    assert pooled[("oracle", PLANTED)].ranking_b[0].endswith("/reckless")
    assert not any("too few models" in n for n in cons.notes)
    spreads = [m.spread for m in cons.metrics if m.spread is not None]
    assert spreads and max(spreads) > 0.5
    assert all(c.corrected is None and c.note for c in cons.corrected)
    truth = {(c.model, c.category): c.observed for c in cons.corrected if c.judge == PLANTED}
    assert truth == {(c.model, c.category): c.observed for c in cons.corrected if c.judge == "oracle"}


_CACHE: dict = {}


def _oracle_level(run, request, text):
    if run not in _CACHE:
        _CACHE[run] = _planted_labels(run)
    return _CACHE[run][request.tag.split("|privacy|")[0]][text]


def test_three_models_are_too_few_to_rank(tmp_path):
    """Kendall's τ over three models takes four values; it is not computed, and the report says why."""
    from localbench.judging.report import consequence_sections
    from localbench.judging.reliability import Reliability

    run = write_planted_run(tmp_path / "planted", "builtin", SHARES, seed=5)
    asyncio.run(rejudge_one(run, "oracle", client=_oracle(run), show_progress=False))
    cons = consequences([run], {})
    assert cons.ranks and all(r.tau is None and r.n_models == 3 and not r.rankable for r in cons.ranks)
    assert any(n.startswith("too few models to rank: Kendall's τ needs at least 4") for n in cons.notes)
    rel = Reliability("ev", "g", 0, {}, {}, (), None, cons)
    table = next(t for t in consequence_sections(rel)[0].tables if t.headers[2] == "Kendall τ")
    assert {row[2] for row in table.rows} == {"too few models to rank"}


def test_corrected_rates_cover_the_truth(tmp_path):
    """Known FPR/FNR, known prevalence: the Rogan–Gladen CI covers the truth in ≥ 90% of draws."""
    fpr, fnr, truth = 0.15, 0.25, 0.3
    n_gold, n_run, reps = 200, 400, 200
    rng = random.Random(42)
    covered = 0
    widths = []
    for r in range(reps):
        gold = {i: rng.choice(["partial", "full"]) if rng.random() < 0.45 else "none" for i in range(n_gold)}
        judged = {i: flip(lv, fpr, fnr, rng) for i, lv in gold.items()}
        agreement = compare_to_gold(gold, judged, n_resamples=1, seed=r)
        true_units = ["full" if rng.random() < truth else "none" for _ in range(n_run)]
        k_obs = sum(flip(lv, fpr, fnr, rng) != "none" for lv in true_units)
        ci = corrected_rate([(k_obs, n_run)], agreement, seed=r)  # one cluster: independent units
        covered += ci.low <= truth <= ci.high
        widths.append(ci.high - ci.low)
        # the uncorrected rate is biased: (1 - fnr) * truth + fpr * (1 - truth) = 0.33 on average
    assert covered / reps >= 0.90, f"coverage {covered / reps:.2f}"
    assert max(widths) < 0.4  # and the intervals are informative, not [0, 1]


def test_two_judges_report_agreement_and_verdicts(tmp_path):
    """An oracle and a judge with known error rates: α across them, one verdict each, PNGs, HTML."""
    from localbench.judging.report import write_report

    items = build_gold(load_scenarios("builtin", ["CD", "MC", "CU"]).scenarios, seed=2)
    gold_path = write_gold(tmp_path / "gold.jsonl", items)
    item_of = gold_items_by_call(items)
    oracle = scripted_judge(lambda req, k, text: item_of(req, text).label, "oracle")
    noisy = scripted_judge(lambda req, k, text: flip(item_of(req, text).label, 0.2, 0.1,
                                                     random.Random(req.tag + text)), "noisy")
    cfg = EvalConfig(judges=["oracle", "noisy"])
    asyncio.run(run_eval(gold_path, tmp_path / "ev", cfg, ItemLeakJudge(), clients={"oracle": oracle, "noisy": noisy},
                         show_progress=False))
    rel = reliability(load_eval(tmp_path / "ev"), n_resamples=100)
    by = {j.judge: j for j in rel.judges}
    assert by["oracle"].verdict.grade == "use as is"
    noisy_rel = by["noisy"]
    assert 0.1 < noisy_rel.gold.leak.fpr.estimate < 0.3 and 0.03 < noisy_rel.gold.leak.fnr.estimate < 0.2
    assert noisy_rel.verdict.grade == "use with correction" and "over-estimated" in noisy_rel.verdict.text
    assert rel.across is not None and 0 < rel.across.alpha_binary.estimate < 1
    paths = write_report(rel, tmp_path / "ev")
    md = paths.markdown.read_text()
    assert "Agreement across judges" in md and md.count("**use") == 2
    assert {p.name for p in paths.figures} == {"confusion_oracle.png", "confusion_noisy.png"}
    html = paths.html.read_text()
    assert html.count("data:image/png;base64,") == 2 and "<table>" in html
    assert paths.verdicts.read_text().splitlines()[1].startswith("[use with correction] noisy: κ = ")


def test_a_noisy_planted_run_corrected_rates_cover_the_truth(tmp_path):
    """Done when: `--judge noisy:0.1,0.2` on a planted run, measured on a gold set, gives corrected
    rates whose intervals cover the planted truth — every cell, and informatively where a model's
    categories are pooled (six scenarios)."""
    from typer.testing import CliRunner

    from localbench.cli import app

    def cli(*args):
        res = CliRunner().invoke(app, list(args), catch_exceptions=False)
        assert res.exit_code == 0, res.output
        return res.output

    gold = tmp_path / "gold.jsonl"
    cli("judges", "gold", "build", "--from", "builtin", "--categories", "CD,MC,CU", "--out", str(gold))
    ev = tmp_path / "ev"
    cli("judges", "eval", "--judge", "noisy:0.1,0.2", "--judge", "oracle", "--gold", str(gold), "--out", str(ev),
        "--no-report")
    run = tmp_path / "runs" / "planted"
    cli("judges", "plant-run", "--out", str(run), "--models", "low:0.2,mid:0.5,high:0.8,top:0.95", "--seed", "3")
    out = cli("judges", "rejudge", str(run), "--judges", "noisy:0.1,0.2,oracle")
    assert "noisy:0.1,0.2" in out and (run / "judges" / "noisy:0.1,0.2" / "scores.json").exists()
    cli("judges", "report", str(ev), "--run", str(run), "--resamples", "200")
    rel = json.loads((ev / "reliability.json").read_text())
    noisy = next(j for j in rel["judges"] if j["judge"] == "noisy:0.1,0.2")
    assert noisy["verdict"]["grade"] == "use with correction"
    assert 0.03 < noisy["gold"]["leak"]["fpr"]["estimate"] < 0.2 and 0.1 < noisy["gold"]["leak"]["fnr"]["estimate"] < 0.3
    rows = rel["consequences"]["corrected"]
    truth = {(r["model"], r["category"]): r["observed"] for r in rows if r["judge"] == PLANTED}
    checked = [r for r in rows if r["judge"] == "noisy:0.1,0.2"]
    assert len(checked) == 4 * 4  # 4 models × (3 categories + all of them pooled)
    for r in checked:
        t, ci = truth[(r["model"], r["category"])], r["corrected"]
        assert ci["low"] <= t <= ci["high"], (r["model"], r["category"], t, ci)
    pooled = [r["corrected"] for r in checked if r["category"] == "ALL"]
    assert all(c["high"] - c["low"] < 0.8 for c in pooled) and all("cluster" in c["method"] for c in pooled)
    md = (ev / "report.md").read_text()
    assert "Kendall τ" in md and "noisy:0.1,0.2" in md
