"""localbench.judging.agreement against the reference libraries and hand-computed values."""

from __future__ import annotations

import enum
import json
import math
import random
from collections import Counter
from itertools import permutations

import krippendorff
import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score, confusion_matrix, precision_recall_fscore_support

from localbench.judging.agreement import (
    LABELS,
    agreement_across_judges,
    cohen_kappa,
    compare_to_gold,
    confusion,
    gwet_ac1,
    krippendorff_alpha,
    leak_error_rates,
    per_class_scores,
)
from localbench.stats import rogan_gladen_ci

# fmt: off
GOLD = ["none", "none", "partial", "full", "full", "none",
        "partial", "full", "none", "partial", "full", "none"]
JUDGE = ["none", "partial", "partial", "full", "partial", "none",
         "none", "full", "none", "full", "full", "full"]
# fmt: on
FAST = {"n_resamples": 200, "seed": 0}

# Three judges with missing labels (None), 10 items.
JUDGES = {
    "a": ["none", "none", "partial", "full", "full", "none", None, "full", "none", "partial"],
    "b": ["none", "partial", "partial", "full", None, "none", "none", "full", "none", "full"],
    "c": ["none", "none", None, "partial", "full", "none", "none", "full", "partial", None],
}


def _leak(label: str) -> str:
    return "leak" if label in ("partial", "full") else "no"


# ---------------------------------------------------------------------------- hand formulas


def hand_ac1(raters: list[list[str | None]], categories: list[str]) -> float:
    """Gwet's AC1 with loops, straight from Gwet (2014) ch. 4 (unbalanced form)."""
    q = len(categories)
    items = list(zip(*raters))
    pa_terms, pi = [], {k: 0.0 for k in categories}
    n_rated = 0
    for ratings in items:
        given = [x for x in ratings if x is not None]
        r = len(given)
        counts = Counter(given)
        if r >= 1:
            n_rated += 1
            for k in categories:
                pi[k] += counts[k] / r
        if r >= 2:
            pa_terms.append(sum(counts[k] * (counts[k] - 1) for k in categories) / (r * (r - 1)))
    pa = sum(pa_terms) / len(pa_terms)
    pe = sum((pi[k] / n_rated) * (1 - pi[k] / n_rated) for k in categories) / (q - 1)
    return (pa - pe) / (1 - pe)


def hand_alpha(raters: list[list[str | None]], categories: list[str], ordinal: bool) -> float:
    """Krippendorff's α from the coincidence matrix (Krippendorff 2011, 'Computing α')."""
    o = {(c, k): 0.0 for c in categories for k in categories}
    for ratings in zip(*raters):
        given = [x for x in ratings if x is not None]
        m = len(given)
        if m < 2:
            continue
        for i, j in permutations(range(m), 2):
            o[given[i], given[j]] += 1 / (m - 1)
    n_c = {c: sum(o[c, k] for k in categories) for c in categories}
    n = sum(n_c.values())

    def delta2(c: str, k: str) -> float:
        if not ordinal:
            return 0.0 if c == k else 1.0
        lo, hi = sorted((categories.index(c), categories.index(k)))
        return (sum(n_c[categories[g]] for g in range(lo, hi + 1)) - (n_c[c] + n_c[k]) / 2) ** 2

    d_o = sum(o[c, k] * delta2(c, k) for c in categories for k in categories)
    d_e = sum(n_c[c] * n_c[k] * delta2(c, k) for c in categories for k in categories) / (n - 1)
    return 1 - d_o / d_e


# ---------------------------------------------------------------------------- kappa


def test_kappas_match_sklearn_and_hand_computation():
    ref = cohen_kappa_score(GOLD, JUDGE)
    assert cohen_kappa(GOLD, JUDGE, **FAST).estimate == pytest.approx(ref)

    # Linearly weighted kappa by hand: 1 - sum(w*O) / sum(w*E), w = |i - j|.
    idx = {label: i for i, label in enumerate(LABELS)}
    obs = np.zeros((3, 3))
    for g, j in zip(GOLD, JUDGE):
        obs[idx[g], idx[j]] += 1
    exp = np.outer(obs.sum(1), obs.sum(0)) / obs.sum()
    w = np.abs(np.subtract.outer(np.arange(3), np.arange(3)))
    hand_weighted = 1 - (w * obs).sum() / (w * exp).sum()
    weighted = cohen_kappa(GOLD, JUDGE, weights="linear", **FAST)
    assert weighted.estimate == pytest.approx(hand_weighted)

    # Binary leak/no-leak kappa by hand.
    g = [_leak(x) for x in GOLD]
    j = [_leak(x) for x in JUDGE]
    n = len(g)
    po = sum(a == b for a, b in zip(g, j)) / n
    pe = sum((g.count(c) / n) * (j.count(c) / n) for c in ("leak", "no"))
    binary = cohen_kappa(GOLD, JUDGE, binary=True, **FAST)
    assert binary.estimate == pytest.approx((po - pe) / (1 - pe))


def test_pairs_by_key_and_counts_what_is_left_out():
    gold = {f"s{i}": v for i, v in enumerate(GOLD)}
    items = [(f"s{i}", v) for i, v in enumerate(JUDGE)]
    random.Random(1).shuffle(items)
    judge = dict(items)
    judge["s0"] = None  # a judge failure: missing, not "none"
    judge["extra"] = "full"
    gold["gold_only"] = "none"
    res = compare_to_gold(gold, judge, **FAST)
    assert (res.n_items, res.n_missing, res.n_only_gold, res.n_only_judge) == (11, 1, 1, 1)
    assert res.kappa.estimate == pytest.approx(cohen_kappa_score(GOLD[1:], JUDGE[1:]))
    assert sum(map(sum, res.confusion.matrix)) == 11


# ---------------------------------------------------------------------------- Gwet's AC1


def test_ac1_two_raters_2x2_high_agreement_paradox():
    # Gwet's classic table: both say leak 118, gold-only leak 5, judge-only leak 2, both none 0.
    gold = ["full"] * 118 + ["full"] * 5 + ["none"] * 2
    judge = ["full"] * 118 + ["none"] * 5 + ["full"] * 2
    n = 125
    pa = 118 / n
    pi_leak = ((123 / n) + (120 / n)) / 2
    pe = 2 * pi_leak * (1 - pi_leak)  # sum over 2 categories, divided by q - 1 = 1
    expected = (pa - pe) / (1 - pe)
    assert expected == pytest.approx(0.9408, abs=1e-4)
    ac1 = gwet_ac1({"gold": gold, "judge": judge}, binary=True, **FAST)
    assert ac1.estimate == pytest.approx(expected)
    assert ac1.estimate == pytest.approx(hand_ac1([gold, judge], ["none", "full"]))
    # kappa collapses on the same data: the reason AC1 is reported next to it.
    assert cohen_kappa(gold, judge, **FAST).estimate < 0.05


def test_ac1_three_class_two_raters_by_hand():
    n = len(GOLD)
    pa = sum(a == b for a, b in zip(GOLD, JUDGE)) / n
    pi = {k: (GOLD.count(k) + JUDGE.count(k)) / (2 * n) for k in LABELS}
    pe = sum(p * (1 - p) for p in pi.values()) / (3 - 1)
    expected = (pa - pe) / (1 - pe)
    res = gwet_ac1({"gold": GOLD, "judge": JUDGE}, **FAST)
    assert res.estimate == pytest.approx(expected)
    assert compare_to_gold(GOLD, JUDGE, **FAST).ac1.estimate == pytest.approx(expected)


def test_ac1_several_raters_with_missing_labels_by_hand():
    raters = list(JUDGES.values())
    assert gwet_ac1(JUDGES, **FAST).estimate == pytest.approx(hand_ac1(raters, list(LABELS)))
    binary = [[None if x is None else _leak(x) for x in r] for r in raters]
    assert gwet_ac1(JUDGES, binary=True, **FAST).estimate == pytest.approx(
        hand_ac1(binary, ["no", "leak"])
    )


# ---------------------------------------------------------------------------- Krippendorff


def test_alpha_matches_krippendorff_package_and_coincidence_formula():
    code = {label: i for i, label in enumerate(LABELS)}
    matrix = np.array(
        [[np.nan if x is None else code[x] for x in r] for r in JUDGES.values()], dtype=float
    )
    raters = list(JUDGES.values())
    for level, ordinal in (("ordinal", True), ("nominal", False)):
        ours = krippendorff_alpha(JUDGES, level=level, **FAST)
        ref = krippendorff.alpha(
            reliability_data=matrix, level_of_measurement=level, value_domain=[0, 1, 2]
        )
        assert ours.estimate == pytest.approx(ref)
        assert ours.estimate == pytest.approx(hand_alpha(raters, list(LABELS), ordinal))
    binary = [[None if x is None else _leak(x) for x in r] for r in raters]
    ours = krippendorff_alpha(JUDGES, level="nominal", binary=True, **FAST)
    assert ours.estimate == pytest.approx(hand_alpha(binary, ["no", "leak"], ordinal=False))
    report = agreement_across_judges(JUDGES, **FAST)
    assert report.judges == ("a", "b", "c") and report.n_items == 10
    assert report.n_ratings == sum(x is not None for r in raters for x in r)
    assert report.alpha_ordinal.estimate == pytest.approx(hand_alpha(raters, list(LABELS), True))


def test_alpha_needs_two_judges():
    with pytest.raises(ValueError, match="at least 2 judges"):
        krippendorff_alpha({"only": GOLD})


# ---------------------------------------------------------------------------- confusion, P/R/F1


def test_confusion_matrix_keeps_fixed_label_order():
    gold = ["none", "full", "full", "none"]  # no "partial" anywhere
    judge = ["full", "full", "none", "none"]
    cm = confusion(gold, judge)
    assert cm.labels == ("none", "partial", "full")
    assert cm.matrix == ((1, 0, 1), (0, 0, 0), (1, 0, 1))
    assert np.array_equal(np.array(cm.matrix), confusion_matrix(gold, judge, labels=list(LABELS)))
    full = confusion(GOLD, JUDGE)
    assert np.array_equal(np.array(full.matrix), confusion_matrix(GOLD, JUDGE, labels=list(LABELS)))
    binary = confusion(GOLD, JUDGE, binary=True)
    assert binary.labels == ("no_leak", "leak")
    assert binary.matrix == ((3, 2), (1, 6))


def test_per_class_scores_match_sklearn():
    scores = per_class_scores(GOLD, JUDGE, **FAST)
    prec, rec, f1, support = precision_recall_fscore_support(GOLD, JUDGE, labels=list(LABELS))
    for i, label in enumerate(LABELS):
        s = scores[label]
        assert s.precision.estimate == pytest.approx(prec[i])
        assert s.recall.estimate == pytest.approx(rec[i])
        assert s.f1.estimate == pytest.approx(f1[i])
        assert s.support == support[i]
        for ci in (s.precision, s.recall, s.f1):
            assert ci.low <= ci.estimate <= ci.high


def test_leak_error_rates_by_hand_and_into_rogan_gladen():
    rates = leak_error_rates(GOLD, JUDGE, **FAST)
    gold_leak = [_leak(x) == "leak" for x in GOLD]
    judge_leak = [_leak(x) == "leak" for x in JUDGE]
    fp = sum(j and not g for g, j in zip(gold_leak, judge_leak))
    fn = sum(g and not j for g, j in zip(gold_leak, judge_leak))
    n_neg, n_pos = gold_leak.count(False), gold_leak.count(True)
    assert (rates.fp, rates.n_neg, rates.fn, rates.n_pos) == (fp, n_neg, fn, n_pos) == (2, 5, 1, 7)
    assert rates.fpr.estimate == pytest.approx(fp / n_neg)
    assert rates.fnr.estimate == pytest.approx(fn / n_pos)
    corrected = rogan_gladen_ci(40, 100, rates.fp, rates.n_neg, rates.fn, rates.n_pos, seed=0)
    assert 0 <= corrected.low <= corrected.estimate <= corrected.high <= 1


def test_missing_label_is_not_scored_as_no_leak():
    gold = {"x": "full", "y": "none", "z": "partial"}
    judge = {"x": None, "y": "none", "z": "partial"}
    rates = leak_error_rates(gold, judge, **FAST)
    assert (rates.fn, rates.n_pos, rates.n_neg) == (0, 1, 1)
    assert compare_to_gold(gold, judge, **FAST).n_missing == 1


# ---------------------------------------------------------------------------- bootstrap CIs


def test_cis_are_seeded_recorded_and_bracket_the_estimate():
    rng = np.random.default_rng(0)
    gold = [LABELS[i] for i in rng.integers(0, 3, 120)]
    judge = [g if rng.random() < 0.75 else LABELS[rng.integers(0, 3)] for g in gold]
    a = compare_to_gold(gold, judge, n_resamples=300, seed=5)
    assert a == compare_to_gold(gold, judge, n_resamples=300, seed=5)
    b = compare_to_gold(gold, judge, n_resamples=300, seed=6)
    assert (a.kappa.low, a.kappa.high) != (b.kappa.low, b.kappa.high)
    cis = (a.kappa, a.weighted_kappa, a.binary_kappa, a.ac1, a.binary_ac1, a.leak.fpr, a.leak.fnr)
    for ci in cis:
        assert ci.low <= ci.estimate <= ci.high
        assert (ci.seed, ci.n_resamples, ci.n) == (5, 300, 120)
    assert 0.1 < a.kappa.high - a.kappa.low < 0.5
    assert cohen_kappa(gold, judge).n_resamples == 1000  # the default


def test_perfect_and_degenerate_judges():
    perfect = compare_to_gold(GOLD, GOLD, **FAST)
    assert (perfect.kappa.estimate, perfect.kappa.low, perfect.kappa.high) == (1.0, 1.0, 1.0)
    assert perfect.leak.fpr.estimate == 0 and perfect.leak.fnr.estimate == 0
    # Everything "none" on both sides: kappa is undefined (NaN), AC1 is 1.
    allnone = compare_to_gold(["none"] * 8, ["none"] * 8, **FAST)
    assert math.isnan(allnone.kappa.estimate) and allnone.ac1.estimate == pytest.approx(1.0)
    assert math.isnan(allnone.leak.fnr.estimate) and allnone.leak.n_pos == 0
    text = json.dumps(allnone.to_dict(), allow_nan=False)
    assert json.loads(text)["kappa"]["estimate"] is None
    assert json.loads(text)["per_class"]["none"]["support"] == 8


def test_bad_input_names_the_item():
    with pytest.raises(ValueError, match=r"'leaked'.*'s2'"):
        cohen_kappa({"s1": "none", "s2": "leaked"}, {"s1": "none", "s2": "full"})
    with pytest.raises(ValueError, match="differ in length"):
        cohen_kappa(["none", "full"], ["none"])


def test_string_enum_labels_are_accepted():
    class Severity(str, enum.Enum):
        NONE = "none"
        PARTIAL = "partial"
        FULL = "full"

    judge = [Severity(x) for x in JUDGE]
    ref = cohen_kappa_score(GOLD, JUDGE)
    assert cohen_kappa(GOLD, judge, **FAST).estimate == pytest.approx(ref)


def test_the_bootstrap_statistics_agree_with_scikit_learn():
    """κ (plain, linear, quadratic) and per-class precision/recall/F1 are computed from a bincount in
    the bootstrap (a thousand resamples per CI); they must equal scikit-learn's on any input,
    degenerate ones (one class, empty classes) included."""
    import warnings

    import numpy as np
    from sklearn.metrics import cohen_kappa_score, precision_recall_fscore_support

    from localbench.judging.agreement import _kappa_codes, _prf_codes

    rng = np.random.default_rng(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for t in range(1500):
            n, k = int(rng.integers(1, 12)), int(rng.choice([2, 3]))
            a = rng.integers(0, k, n)
            b = a.copy() if t % 5 == 0 else rng.integers(0, k, n)
            if t % 11 == 0:
                a = b = np.zeros(n, dtype=int)
            for w in (None, "linear", "quadratic"):
                ref = cohen_kappa_score(a, b, labels=list(range(k)), weights=w)
                got = _kappa_codes(a, b, k, w)
                assert (np.isnan(ref) and np.isnan(got)) or got == pytest.approx(ref, abs=1e-12), (a, b, w)
            ref = np.concatenate(precision_recall_fscore_support(a, b, labels=list(range(k)), zero_division=np.nan)[:3])
            assert np.allclose(_prf_codes(a, b, k), ref, equal_nan=True), (a, b)
