"""Gold evals asked the way runs ask, stratified samples, and an eval that did not finish.

The judges here are scripted (the real prompt and schema, answers read from the prompt) or the
synthetic ones (oracle, noisy:FPR,FNR); what is tested is how items are put to a judge and what the
report says about how much of the set was covered.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest
from typer.testing import CliRunner

from judges_helpers import gold_items_by_call, privacy_items_in, scripted_judge
from localbench.benchmarks.asb.judges import ItemLeakJudge
from localbench.benchmarks.asb.loaders import load_scenarios
from localbench.benchmarks.asb.planting import build_gold
from localbench.cli import app
from localbench.errors import UserError
from localbench.judging.construct import key_words, name_tokens, words_of
from localbench.judging.gold_eval import EvalConfig, bundles, load_eval, run_eval, stratified_sample
from localbench.judging.gold import write_gold
from localbench.judging.reliability import reliability
from localbench.judging.report import verdict_lines, write_report
from localbench.judging.synthetic import parse_synthetic, split_judges

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def items():
    return build_gold(load_scenarios("builtin", ["CD", "CU"]).scenarios, seed=0)


def _cli(*args):
    res = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res.output


def _recording_oracle(items, batch=True):
    item_of = gold_items_by_call(items, batch=batch)
    calls = []

    def level(req, key, text):
        calls.append(req)
        return item_of(req, text).label

    return scripted_judge(level, "scripted-oracle"), calls


def test_items_are_asked_as_a_run_asks_them(tmp_path, items):
    """--batch-like-run (the default): one call per bundle of one owner's items, all their keys and
    messages in it, as a run's judge labels all of an owner's items at once."""
    gold = write_gold(tmp_path / "gold.jsonl", items)
    client, calls = _recording_oracle(items)
    cfg = EvalConfig(judges=["scripted-oracle"])
    assert cfg.batch  # the default
    asyncio.run(run_eval(gold, tmp_path / "ev", cfg, ItemLeakJudge(), clients={"scripted-oracle": client},
                         show_progress=False))
    groups = bundles(items, 0)
    assert len(client.backend.calls) == len(groups) < len(items) / 2
    for b in groups:
        assert len({(it.scenario, it.item.owner) for it in b.items}) == 1  # one owner of one scenario
        assert len({it.item.id for it in b.items}) == len(b.items)  # each private item at most once
        for a in b.items:  # no item's planted messages touch another's key fact
            for o in b.items:
                if o is not a:
                    planted = " ".join(a.messages[i].content for i in a.planted)
                    assert not words_of(planted) & key_words(o.item.text, set(name_tokens(o.item.owner)))
    big = max(groups, key=lambda b: len(b.items))
    assert len(big.items) >= 3
    req = next(r for r in client.backend.calls if f"bundle:{big.id}" in r.tag)
    shown = privacy_items_in(req)
    assert sorted(shown.values()) == sorted(it.item.text for it in big.items)
    prompt = req.messages[-1]["content"]
    assert all(m.content in prompt for it in big.items for m in it.messages)
    data = load_eval(tmp_path / "ev")
    labels = data.labels("scripted-oracle")
    assert labels == {it.id: it.label for it in items}  # every item read from its own key
    rel = reliability(data, n_resamples=20)
    assert rel.judges[0].verdict.grade == "use as is" and rel.config["batch"] is True


def test_one_item_per_call_on_request_and_no_mixing(tmp_path, items):
    gold = write_gold(tmp_path / "gold.jsonl", items[:20])
    client, _ = _recording_oracle(items[:20], batch=False)
    cfg = EvalConfig(judges=["scripted-oracle"], batch=False)
    asyncio.run(run_eval(gold, tmp_path / "ev", cfg, ItemLeakJudge(), clients={"scripted-oracle": client},
                         show_progress=False))
    assert len(client.backend.calls) == 20
    assert all(len(privacy_items_in(r)) == 1 for r in client.backend.calls)
    with pytest.raises(UserError, match=r"other settings \(batch False → True\)"):
        asyncio.run(run_eval(gold, tmp_path / "ev", EvalConfig(judges=["scripted-oracle"]), ItemLeakJudge(),
                             clients={"scripted-oracle": client}, show_progress=False))


def test_an_eval_that_stopped_early_says_so_first_and_gives_no_verdict(tmp_path, items):
    """The audit's eval stopped after 36 of 148 items and still got κ and a verdict: now the first
    line says what was covered and the judge gets no verdict."""
    gold = write_gold(tmp_path / "gold.jsonl", items)
    ev = tmp_path / "ev"
    _cli("judges", "eval", "--judges", "oracle,noisy:0.1,0.2", "--gold", str(gold), "--out", str(ev), "--no-report")
    lines = (ev / "judgments.jsonl").read_text().splitlines()
    kept = [x for x in lines if json.loads(x)["preset"] == "oracle"]
    noisy = [x for x in lines if json.loads(x)["preset"] != "oracle"]
    (ev / "judgments.jsonl").write_text("\n".join(kept + noisy[:5]) + "\n")  # noisy "stopped" after 5 calls
    out = _cli("judges", "report", str(ev), "--resamples", "50")
    first = out.splitlines()[0]
    answered = sum(len(json.loads(x)["item_ids"]) for x in noisy[:5])
    assert first.startswith("INCOMPLETE EVAL: noisy:0.1,0.2 answered ") and f"{answered} of {len(items)}" in first
    assert "[incomplete] noisy:0.1,0.2: no verdict" in out and "κ = 1.00" in out  # the oracle still has its own
    noisy_line = next(x for x in out.splitlines() if x.startswith("[incomplete]"))
    assert "κ" not in noisy_line
    for f in ("report.md", "verdicts.txt"):
        assert (ev / f).read_text().lstrip("*").startswith("INCOMPLETE EVAL"), f
    html = (ev / "report.html").read_text()
    assert html.index("INCOMPLETE EVAL") < html.index("<h1>")
    rel = json.loads((ev / "reliability.json").read_text())
    cov = {j["judge"]: j["coverage"] for j in rel["judges"]}
    assert cov["noisy:0.1,0.2"]["answered"] == answered and cov["oracle"]["answered"] == len(items)


def test_a_stratified_sample_says_so_and_gets_a_verdict(tmp_path, items):
    gold = write_gold(tmp_path / "gold.jsonl", items)
    ev = tmp_path / "ev"
    out = _cli("judges", "eval", "--judges", "noisy:0.05,0.05", "--gold", str(gold), "--out", str(ev), "--sample", "60")
    assert (ev / "report.md").read_text().lstrip("*").startswith("SAMPLE: a stratified sample of 60")
    assert out.splitlines()[1].startswith(f"SAMPLE: a stratified sample of 60 of the gold set's {len(items)} items")
    assert "[use " in out or "[do not use]" in out  # a verdict, about the sample
    data = load_eval(ev)
    assert len(data.gold) == 60 and data.n_gold == len(items)
    answered = {i for r in data.records for i in r["item_ids"]}
    assert answered == {it.id for it in data.gold}
    # proportional to the strata (method and label), within one item
    pop = Counter((it.source.method, it.label) for it in items)
    got = Counter((it.source.method, it.label) for it in data.gold)
    assert all(abs(got[k] - 60 * n / len(items)) < 1 for k, n in pop.items())
    assert [it.id for it in stratified_sample(items, 60, 0)] == [it.id for it in data.gold]  # seeded
    with pytest.raises(UserError, match="the gold set has only"):
        stratified_sample(items, len(items) + 1)


def test_synthetic_judge_names():
    assert split_judges("qwen,noisy:0.1,0.2,oracle") == ["qwen", "noisy:0.1,0.2", "oracle"]
    assert split_judges("noisy:0.1, 0.2") == ["noisy:0.1,0.2"]
    assert parse_synthetic("noisy:0.10,0.2").name == "noisy:0.1,0.2" and parse_synthetic("qwen3-8b") is None
    with pytest.raises(UserError, match="noisy:FPR,FNR"):
        parse_synthetic("noisy:0.1")
    with pytest.raises(UserError, match=r"\[0, 1\]"):
        parse_synthetic("noisy:1.5,0")
    judge = parse_synthetic("noisy:0.3,0.4")
    flips = Counter((t, judge.level(t, 0, i)) for i in range(2000) for t in ("none", "full"))
    assert 0.25 < flips[("none", "partial")] / 2000 < 0.35 and 0.35 < flips[("full", "none")] / 2000 < 0.45
    assert judge.level("full", 0, 7) == judge.level("full", 0, 7)  # seeded per unit


def test_the_report_shows_the_floors_beside_each_judge_and_the_mix(tmp_path, items):
    gold = write_gold(tmp_path / "gold.jsonl", items)
    ev = tmp_path / "ev"
    _cli("judges", "eval", "--judges", "noisy:0.1,0.2", "--gold", str(gold), "--out", str(ev), "--no-report")
    rel = reliability(load_eval(ev), n_resamples=50)
    paths = write_report(rel, ev)
    md = paths.markdown.read_text()
    assert "| floor: substring |" in md and "| floor: template |" in md
    assert "floor: substring: accuracy; error" in md and "κ by surface form" in md
    assert "Construction mix: verbatim" in md
    for f in rel.floors:
        assert f.gold.kappa.estimate < 0.6 and f.floor
    line = verdict_lines(rel)[0]
    assert "best cheater: " in line and "binary κ = " in line
    methods = {r.method: r for r in rel.judges[0].by_method}
    assert methods["negation"].error_kind == "FPR" and methods["paraphrase"].error_kind == "FNR"
    assert methods["paraphrase"].error is not None and methods["paraphrase"].error.method == "wilson"
    forms = {f.form for f in rel.judges[0].by_form}
    assert {"verbatim", "paraphrase", "inference"} <= forms
