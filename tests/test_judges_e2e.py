"""The judge-reliability lab end to end on real engines and real files.

The tiny random Llama (hf engine, xgrammar) proves the plumbing: every gold item in every variant
gets a schema-valid label or a recorded failure, runs resume, a finished run is rejudged and
scored by the benchmark's code, and the report is written. SmolLM2-135M (slow) proves a real model
goes through, and that the report states its κ as measured.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from typer.testing import CliRunner

from localbench.benchmarks.asb.loaders import load_scenarios
from localbench.cli import app
from localbench.judging.agreement import LABELS, cohen_kappa
from localbench.benchmarks.asb.judges import ItemLeakJudge
from localbench.benchmarks.asb.planting import PLANTED, build_gold, write_planted_run
from localbench.judging.gold_eval import EvalConfig, bundles, load_eval, run_eval, task_key
from localbench.judging.gold import read_gold, write_gold
from localbench.runlog import JsonlStore

pytestmark = pytest.mark.timeout(600)


def _invoke(*args: str):
    res = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res


def _gold(tmp_path, methods, categories=("CD",), limit=1, name="gold.jsonl"):
    items = build_gold(load_scenarios("builtin", list(categories), limit=limit).scenarios, seed=0, methods=methods)
    return write_gold(tmp_path / name, items)


def test_tiny_random_eval_rejudge_report(tmp_path, tiny_dir):
    gold = _gold(tmp_path, ["verbatim", "split", "fragment", "abstraction", "other_person", "negation"])
    items = read_gold(gold)
    ev = tmp_path / "ev"
    res = _invoke("judges", "eval", "--judges", "tiny-random", "--gold", str(gold), "--out", str(ev),
                  "--seeds", "2", "--shuffle", "--pad", "--engine", "hf", "--max-tokens", "200")
    assert "tiny-random: " in res.output and "κ = " in res.output
    cfg = json.loads((ev / "eval.json").read_text())  # which model judged, with which rubrics
    assert cfg["judge_models"]["tiny-random"]["identity"]["preset"] == "tiny-random"
    assert cfg["judge_models"]["tiny-random"]["engine"]["engine"] == "hf"
    assert "asb/privacy_items.j2" in cfg["rubric_files"]
    store = JsonlStore(ev / "judgments.jsonl")
    runs = [("base", 0), ("base", 1), ("shuffled", 0), ("padded", 0)]
    groups = bundles(items, 0)  # asked as a run asks: one owner's items per call
    assert len(groups) < len(items)
    assert store.keys() == {task_key("tiny-random", f"bundle:{b.id}", v, k) for b in groups for v, k in runs}
    for r in store.read():
        if r["failure"] is None:  # schema-valid: one level for exactly the bundle's items
            assert set(r["label"]["levels"]) == set(r["item_ids"])
            assert all(lv in LABELS for lv in r["label"]["levels"].values())
            assert r["call"]["finish_reason"] == "stop"
        else:
            assert r["label"] is None and r["failure"]
        assert r["temperature"] == (0.7 if r["seed_index"] else 0.0)
    padded = [r for r in store.read() if r["variant"] == "padded"]
    base = {r["key"].split("|")[1]: r for r in store.read() if r["variant"] == "base" and r["seed_index"] == 0}
    assert all(r["n_messages"] == base[r["key"].split("|")[1]]["n_messages"] + 8 for r in padded)
    for f in ("report.md", "report.html", "reliability.json", "verdicts.txt", "figures/confusion_tiny-random.png"):
        assert (ev / f).stat().st_size > 0, f
    rel = json.loads((ev / "reliability.json").read_text())
    kappa = rel["judges"][0]["gold"]["kappa"]["estimate"]
    md = (ev / "report.md").read_text()
    assert f"κ = {kappa:.2f}" in md and rel["judges"][0]["verdict"]["grade"] in md
    # resume: nothing is asked again
    res = _invoke("judges", "eval", "--judges", "tiny-random", "--gold", str(gold), "--out", str(ev),
                  "--seeds", "2", "--shuffle", "--pad", "--engine", "hf", "--max-tokens", "200", "--no-report")
    assert f"0 calls made, {4 * len(groups)} already done" in res.output

    # a finished run with known leak rates, rejudged by the tiny model, then the consequences
    run = write_planted_run(tmp_path / "runs" / "planted", "builtin", {"a": 0.2, "b": 0.8}, seed=1,
                            categories=["CD", "MC"])
    _invoke("judges", "rejudge", str(run), "--judges", "tiny-random")
    jdir = run / "judges" / "tiny-random"
    info = json.loads((jdir / "rejudge.json").read_text())
    assert info["identity"] == cfg["judge_models"]["tiny-random"]["identity"] and info["rubrics"] == cfg["rubric_files"]
    judged = list(JsonlStore(jdir / "judgments.jsonl").read())
    assert judged and {j["judge"] for j in judged} == {"privacy"}
    lines = [json.loads(x) for x in (jdir / "scenario_scores.jsonl").read_text().splitlines()]
    assert len(lines) == 8 and all(set(ln["metrics"]) <= {"CDLR", "CDLR_full", "CDLR_partial", "MLR", "MLR_full",
                                                           "MLR_partial"} for ln in lines)
    assert (jdir / "scores.json").exists()
    res = _invoke("judges", "report", str(ev), "--run", str(run), "--resamples", "200")
    md = (ev / "report.md").read_text()
    assert "Consequences for benchmark runs" in md and "Leak rates corrected" in md
    rel = json.loads((ev / "reliability.json").read_text())
    corr = rel["consequences"]["corrected"]
    assert {c["model"] for c in corr} == {"a", "b"} and {c["judge"] for c in corr} == {"tiny-random", PLANTED}
    assert "Do the judges rank the agent models the same way?" in md  # tiny-random vs the planted truth


def test_failures_on_a_real_engine_are_recorded_not_dropped(tmp_path, tiny_dir, monkeypatch):
    """max_tokens too small to finish the JSON even when the retry doubles it: every answer fails and is
    recorded. (The client would give a schema-bounded judge its schema's room from the start: the bound
    is taken away here, as for a schema without one, so that the answers are cut.)"""
    from localbench.serving import reply_bound
    from localbench.serving.client import StructuredClient
    from localbench.serving.engines import open_backend

    monkeypatch.setattr(reply_bound, "max_reply_chars", lambda schema: None)

    gold = _gold(tmp_path, ["verbatim", "absent"])
    client = StructuredClient(open_backend("tiny-random", "hf"), max_retries=1)
    cfg = EvalConfig(judges=["tiny-random"], max_tokens=5)
    summary = asyncio.run(run_eval(gold, tmp_path / "ev", cfg, ItemLeakJudge(), clients={"tiny-random": client}, show_progress=False))
    asyncio.run(client.aclose())
    s = summary["tiny-random"]
    assert s.total == s.failed == len(bundles(read_gold(gold), 0))
    data = load_eval(tmp_path / "ev")
    assert all(v is None for v in data.labels("tiny-random").values())
    for r in data.records:
        assert "cut by max_tokens" in r["failure"] and r["call"]["n_attempts"] == 2 and r["label"] is None
    from localbench.judging.reliability import judge_reliability

    rel = judge_reliability(data, "tiny-random", n_resamples=20)
    assert rel.failure_rate == 1.0 and rel.verdict.grade == "no evidence"
    assert any("failed validation" in n for n in rel.verdict.notes)


def test_reference_judge_labels_saved_as_pseudo_gold(tmp_path, tiny_dir):
    gold = _gold(tmp_path, ["verbatim", "absent"])
    out = tmp_path / "ref.jsonl"
    res = _invoke("judges", "gold", "reference", "--gold", str(gold), "--judge", "tiny-random", "--out", str(out),
                  "--engine", "hf")
    ref = read_gold(out)
    data = load_eval(tmp_path / "ref.jsonl.eval")
    assert [it.id for it in ref] == [it.id for it in read_gold(gold)]
    assert {it.id: it.label for it in ref} == data.labels("tiny-random")
    assert all(it.source.kind == "judge" and it.source.judge == "tiny-random" for it in ref)
    assert f"{sum(it.label is not None for it in ref)} items labelled by tiny-random" in res.output


def test_rewrite_with_a_generator_keeps_labels(tmp_path, tiny_dir):
    out = tmp_path / "gold.jsonl"
    _invoke("judges", "gold", "build", "--from", "builtin", "--categories", "CD", "--limit", "1", "--methods",
            "verbatim,absent", "--out", str(out), "--rewrite-with", "tiny-random", "--engine", "hf", "--allow-weak-gold")
    items = read_gold(out)
    plain = build_gold(load_scenarios("builtin", ["CD"], limit=1).scenarios, seed=0, methods=["verbatim", "absent"])
    assert [(it.id, it.label, it.planted) for it in items] == [(it.id, it.label, it.planted) for it in plain]
    for it, orig in zip(items, plain):
        for k in it.planted:  # each planted message was rewritten, or its failure or rejection recorded, text kept
            assert it.meta["original"][str(k)] == orig.messages[k].content
            kept = str(k) in it.meta.get("rewrite_failures", {}) or str(k) in it.meta.get("rewrite_rejected", {})
            assert (it.messages[k].content == orig.messages[k].content) == kept
        kept = len(it.meta.get("rewrite_failures", {})) + len(it.meta.get("rewrite_rejected", {}))
        if it.planted and kept < len(it.planted):
            assert it.source.generator == "tiny-random"
    assert any(it.planted for it in items)
    rw = items[0].meta["build"]["rewrite"]  # counted: a random model's rewrites rarely keep the facts
    assert rw["generator"] == "tiny-random" and rw["asked"] == sum(len(it.planted) for it in items)
    assert rw["accepted"] + rw["rejected"] + rw["failed"] == rw["asked"] and rw["accepted"] < rw["asked"]


@pytest.mark.slow
def test_smollm2_report_states_its_kappa(tmp_path, smollm2_dir):
    gold = _gold(tmp_path, ["verbatim", "absent", "negation", "fragment"])
    ev = tmp_path / "ev"
    _invoke("judges", "eval", "--judges", "smollm2-135m", "--gold", str(gold), "--out", str(ev), "--engine", "hf")
    data = load_eval(ev)
    labels = data.labels("smollm2-135m")
    gold_labels = {it.id: it.label for it in data.gold}
    assert all(r["failure"] is None or r["label"] is None for r in data.records)
    got = {k: v for k, v in labels.items() if v is not None}
    assert len(got) >= len(gold_labels) // 2  # a real model answers most items in the schema
    kappa = cohen_kappa(gold_labels, labels, n_resamples=1000, seed=0)  # recomputed independently
    rel = json.loads((ev / "reliability.json").read_text())["judges"][0]
    assert rel["gold"]["kappa"]["estimate"] == pytest.approx(kappa.estimate)
    verdict = (ev / "verdicts.txt").read_text()
    assert f"κ = {kappa.estimate:.2f} [{kappa.low:.2f}, {kappa.high:.2f}] vs gold" in verdict
    assert f"κ = {kappa.estimate:.2f}" in (ev / "report.md").read_text()
