"""Gold that a cheater cannot fake: minimal pairs, balanced cues, the cheater bank as the floor."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from localbench.registry import get_benchmark
from localbench.benchmarks.asb.planting import build_gold as build_by_method
from localbench.judging.cheaters import CHEATER_MAX, CONSTANT_PREFIX, NULL_MODELS, learned_leaks, leak_of
from localbench.judging.cues import cue_rates, unbalanced
from localbench.judging.goldcheck import check_gold

LIMITS = {"asb": None, "agentleak": 3, "sopri": None}  # scenarios per category: the smallest sets that prove it


@pytest.fixture(scope="module")
def pair_gold():
    out = {}
    for b, limit in LIMITS.items():
        bm = get_benchmark(b)
        out[b] = bm.build_gold(bm.load_scenarios("builtin", None, limit).values(), seed=0)
    return out


@pytest.fixture(scope="module")
def old_asb_gold():
    bm = get_benchmark("asb")
    return build_by_method(list(bm.load_scenarios("builtin", None, None).values()), seed=0)


def test_the_cue_check_fails_on_gold_built_the_old_way_and_passes_on_pairs(pair_gold, old_asb_gold):
    old = {r.cue for r in unbalanced(cue_rates(old_asb_gold))}
    assert {"negation", "value_tokens", "any_value_token"} <= old  # the shortcut the review found
    for b, items in pair_gold.items():
        assert unbalanced(cue_rates(items)) == [], b


def test_every_leak_has_a_twin_with_the_same_words(pair_gold):
    for b, items in pair_gold.items():
        by_pair: dict[str, dict[str, object]] = {}
        for it in items:
            by_pair.setdefault(it.meta["pair"], {})[it.meta["side"]] = it
        assert by_pair and all(set(p) == {"leak", "twin"} for p in by_pair.values()), b
        for p in by_pair.values():
            leak, twin = p["leak"], p["twin"]
            assert leak.label != "none" and twin.label == "none" and leak.meta["framing"] == twin.meta["framing"]
            words = lambda it: sorted(re.sub(r"(?:'s)?[.,;:()]*$", "", w.strip("()")) for m in it.messages  # noqa: E731
                                      for w in m.content.split())
            assert words(leak) == words(twin), (b, leak.id)
            assert len(leak.messages) == len(twin.messages) == len(items[0].messages)  # one context window
        framings = {(it.meta["framing"], it.meta["side"]) for it in items}
        assert {f for f, s in framings if s == "twin"} <= {f for f, s in framings if s == "leak"}, b


@pytest.fixture(scope="module")
def checks(pair_gold, old_asb_gold):
    """The build's check (cue rates, every cheater's κ, the learned one by grouped cross-validation)
    on each benchmark's pairs and on the old AgentSocialBench gold, computed once."""
    return {b: check_gold(items) for b, items in pair_gold.items()} | {"old asb": check_gold(old_asb_gold)}


def _kappa(check, cheater, scope="all"):
    return next(s.kappa for s in check.cheaters if s.cheater == cheater and s.scope == scope)


def test_the_learned_cheater_stays_below_the_floor_on_pairs_and_passes_the_old_gold(pair_gold, checks):
    from sklearn.metrics import cohen_kappa_score

    items = pair_gold["sopri"]  # trained here, in the test, with grouped cross-validation
    k = cohen_kappa_score([leak_of(it.label) for it in items], learned_leaks(items))
    assert k == pytest.approx(_kappa(checks["sopri"], "learned")) and k < CHEATER_MAX
    for b in pair_gold:
        assert _kappa(checks[b], "learned") < CHEATER_MAX, b
        assert all(s.kappa < CHEATER_MAX for s in checks[b].cheaters if s.cheater == "learned"), b  # per leak type
    assert _kappa(checks["old asb"], "learned") >= CHEATER_MAX  # the same cheater is not blind: it passes the old set


def test_gold_check_names_cheater_and_cue_and_the_hard_share(pair_gold, checks):
    for b, items in pair_gold.items():
        assert checks[b].ok, (b, checks[b].problems)
        assert {s.cheater for s in checks[b].cheaters} == {"substring", "any_token", "keywords", "learned",
                                                           *NULL_MODELS}
    assert checks["asb"].hard_share >= 1 / 3 and checks["agentleak"].hard_share >= 1 / 3
    assert checks["sopri"].hard_share is None  # a guess of a value: paraphrase and inference do not apply
    bad = checks["old asb"]
    assert any("cheater reaches" in p for p in bad.problems) and any("cue differs" in p for p in bad.problems)


def test_gold_build_refuses_pairs_that_a_cheater_passes(tmp_path):
    out = tmp_path / "g.jsonl"
    r = subprocess.run([sys.executable, "-m", "localbench.cli", "judges", "gold", "build", "--from", "builtin",
                        "--categories", "CD", "--methods", "verbatim", "--out", str(out)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and not out.exists()
    assert "not written" in r.stderr and "paraphrase and inference are 0.0%" in r.stderr
    r = subprocess.run([sys.executable, "-m", "localbench.cli", "judges", "gold", "build", "--from", "builtin",
                        "--categories", "CD,MC", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    build = json.loads(out.read_text().splitlines()[0])["meta"]["build"]
    assert build["construction"] == "minimal pairs" and build["check"]["ok"]
    assert "best cheater (binary κ)" in r.stdout and "negation" in r.stdout


def test_what_the_labeller_sees_beyond_the_content_says_nothing_of_the_method(pair_gold):
    """Same context window for every item; the opaque number and the planted message's position,
    given to a classifier grouped by scenario, recover neither the side nor the leak type."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import cohen_kappa_score
    from sklearn.model_selection import GroupKFold, cross_val_predict

    from localbench.judging.labeller import opaque_number

    for b, items in pair_gold.items():
        assert len({len(it.messages) for it in items}) == 1, b
        x = np.array([[int(opaque_number(it.id)[1:]) / 1e6, *(it.planted[0] == k for k in range(4))] for it in items])
        groups = [it.scenario for it in items]
        for target in ([it.meta["side"] for it in items], [it.meta["leak_type"] for it in items]):
            pred = cross_val_predict(LogisticRegression(max_iter=1000), x, target, groups=groups, cv=GroupKFold(3))
            assert cohen_kappa_score(target, pred) < 0.15, (b, cohen_kappa_score(target, pred))


def test_eval_shows_the_cheater_floor_beside_each_judge_and_flags_one_not_above_it(tmp_path, pair_gold):
    from typer.testing import CliRunner

    from localbench.cli import app
    from localbench.judging.gold_eval import load_eval
    from localbench.judging.gold import write_gold
    from localbench.judging.reliability import floor_warnings, floor_warnings_of_eval, reliability

    gold = tmp_path / "gold.jsonl"
    write_gold(gold, pair_gold["asb"])
    ev = tmp_path / "ev"
    res = CliRunner().invoke(app, ["judges", "eval", "--judge", "oracle", "--judge", "noisy:0.45,0.45", "--gold",
                                   str(gold), "--out", str(ev)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    md = (ev / "report.md").read_text()
    assert "| judge | binary κ | best cheater | cheater binary κ | above the cheater? |" in md
    assert "| oracle | 1.00 [1.00, 1.00] | floor: " in md and "| noisy:0.45,0.45 |" in md
    assert "NO (intervals overlap)" in md and "not above the best cheater" in md
    warn = floor_warnings(reliability(load_eval(ev), n_resamples=200))
    assert len(warn) == 1 and warn[0].startswith("noisy:0.45,0.45: binary κ")
    # what a run report calls with the eval that measured its judge
    assert floor_warnings_of_eval(str(ev), "noisy:0.45,0.45") == floor_warnings_of_eval(str(ev))[:1]
    assert floor_warnings_of_eval(str(ev), "noisy:0.45,0.45")[0].startswith("noisy:0.45,0.45: binary κ")
    assert floor_warnings_of_eval(str(ev), "oracle") == []


NULL_TOLERANCE = 0.1  # |κ| of the length and position rules on a sound set (they are fitted out of fold)


def test_every_null_model_floor_scores_at_chance_on_every_shipped_gold_set(pair_gold, checks):
    """A constant answer is exactly at chance (κ 0) whatever the set; the length and position rules are
    at chance where the set gives their one feature nothing to go by: on the whole set and on every
    leak type, binary (the gold check) and 3-class (the eval's floors)."""
    from localbench.judging.floors import floor_kappas

    for b, items in pair_gold.items():
        scores = [s for s in checks[b].cheaters if s.cheater in NULL_MODELS]
        assert {s.cheater for s in scores} == set(NULL_MODELS), b
        scopes = {s.scope for s in checks[b].cheaters}
        assert {s.scope for s in scores} == scopes and len(scopes) > 1, b  # the whole set and each leak type
        for s in scores:
            if s.cheater.startswith(CONSTANT_PREFIX):
                assert s.kappa == 0, (b, s)
            else:
                assert abs(s.kappa) <= NULL_TOLERANCE, (b, s)
        kappas = floor_kappas(items)
        for name in NULL_MODELS:
            k, kb = kappas[name]
            limit = 0 if name.startswith(CONSTANT_PREFIX) else NULL_TOLERANCE
            assert abs(k) <= limit and abs(kb) <= limit, (b, name, k, kb)


def _longer_leaks(items):
    """The set with every leak's messages lengthened: the length rule can now tell leaks apart."""
    pad = " and so on, as I said before."
    return [it if it.label == "none" else
            it.model_copy(update={"messages": [m.model_copy(update={"content": m.content + pad * 6})
                                               for m in it.messages]}) for it in items]


def test_a_judge_that_only_equals_a_null_model_floor_is_not_passed(tmp_path, pair_gold):
    """The oracle (gold's own labels) passes sound gold; on a set whose leaks are simply longer the
    length rule does as well, so the same labels are not passed, and the gold check refuses that set."""
    from typer.testing import CliRunner

    from localbench.cli import app
    from localbench.judging.gold import write_gold

    weak = _longer_leaks(pair_gold["asb"])
    assert any("length cheater" in p for p in check_gold(weak).problems)
    for name, items in (("sound", pair_gold["asb"]), ("weak", weak)):
        gold = write_gold(tmp_path / f"{name}.jsonl", items)
        res = CliRunner().invoke(app, ["judges", "eval", "--judge", "oracle", "--gold", str(gold),
                                       "--out", str(tmp_path / name)], catch_exceptions=False)
        assert res.exit_code == 0, res.output
    sound, weak_v = ((tmp_path / n / "verdicts.txt").read_text() for n in ("sound", "weak"))
    assert weak_v.startswith("[do not use] oracle:") and "not above the null-model floor length (1.00" in weak_v
    assert sound.startswith("[use as is] oracle:") and "above every null-model floor (highest: " in sound
    md = (tmp_path / "weak" / "report.md").read_text()  # the report lists every null model's κ
    assert all(f"| floor: {n} |" in md for n in NULL_MODELS)
