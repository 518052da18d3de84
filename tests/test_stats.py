"""localbench.stats: CIs that cover, tests that hold their level, and reference values."""

from __future__ import annotations

import json
import math
import random

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.proportion import proportion_confint

from localbench.stats import (
    align_by_key,
    bootstrap_ci,
    can_reach_significance,
    min_pairs_for_significance,
    bootstrap_over_units,
    kendall_tau,
    mcnemar_paired,
    mcnemar_test,
    paired_bootstrap_test,
    rogan_gladen,
    rogan_gladen_ci,
    rogan_gladen_cluster_ci,
    wilson_ci,
)

# ---------------------------------------------------------------------------- bootstrap_ci


@pytest.mark.parametrize(
    "draw, true_mean",
    [
        (lambda rng: rng.binomial(1, 0.3, 50).astype(float), 0.3),
        (lambda rng: rng.normal(2.0, 1.5, 50), 2.0),
    ],
    ids=["bernoulli", "normal"],
)
def test_bootstrap_ci_covers_true_mean(draw, true_mean):
    rng = np.random.default_rng(12345)
    hits = 0
    for i in range(200):
        ci = bootstrap_ci(draw(rng), n_resamples=500, seed=i)
        assert ci.low <= ci.estimate <= ci.high
        hits += ci.low <= true_mean <= ci.high
    assert hits / 200 >= 0.90


def test_bootstrap_ci_edge_cases_and_nan_dropping():
    empty = bootstrap_ci([float("nan"), None])
    assert math.isnan(empty.estimate) and empty.n == 0 and empty.n_dropped == 2
    one = bootstrap_ci([0.4, float("nan")])
    assert (one.estimate, one.low, one.high, one.n, one.n_dropped) == (0.4, 0.4, 0.4, 1, 1)
    const = bootstrap_ci([0.5] * 7)
    assert const.low == const.high == 0.5 and const.half_width == 0
    ci = bootstrap_ci([1, 0, 0, 1, 1, float("nan"), 0, 1], seed=3)
    assert ci.n == 7 and ci.n_dropped == 1
    assert ci.estimate == pytest.approx(4 / 7) and ci.mean == ci.estimate
    assert 0 <= ci.low < ci.estimate < ci.high <= 1


def test_bootstrap_ci_is_seeded_and_records_the_seed():
    x = np.random.default_rng(0).normal(size=40)
    a, b, c = bootstrap_ci(x, seed=7), bootstrap_ci(x, seed=7), bootstrap_ci(x, seed=8)
    assert a == b and a.seed == 7 and a.n_resamples == 1000
    assert (a.low, a.high) != (c.low, c.high)


def test_bootstrap_ci_other_statistic_and_confidence():
    x = np.random.default_rng(1).exponential(size=80)
    med = bootstrap_ci(x, statistic=np.median, seed=0)
    assert med.estimate == pytest.approx(np.median(x))
    narrow = bootstrap_ci(x, confidence=0.5, seed=0)
    wide = bootstrap_ci(x, confidence=0.99, seed=0)
    assert wide.low < narrow.low and narrow.high < wide.high
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci(x, confidence=95)


def test_bootstrap_over_units_counts_undefined_resamples():
    x = np.array([0.0, 0.0, 0.0, 0.0, 1.0])

    def ratio(idx):  # undefined when no 1 was drawn
        s = x[idx].sum()
        return [x[idx].mean(), 1.0 / s if s else math.nan]

    mean_ci, ratio_ci = bootstrap_over_units(5, ratio, n_resamples=400, seed=0)
    assert mean_ci.n_undefined == 0 and mean_ci.estimate == pytest.approx(0.2)
    # P(no 1 drawn in 5 draws) = 0.8**5 ~ 0.33
    assert 0.2 < ratio_ci.n_undefined / 400 < 0.45
    assert ratio_ci.low >= 0.2 and ratio_ci.high <= 1.0
    (nothing,) = bootstrap_over_units(0, ratio)
    assert math.isnan(nothing.estimate) and nothing.n == 0


# ---------------------------------------------------------------------------- paired test


def _scenario_scores(rng: np.random.Generator, n: int, shift: float):
    """Per-scenario scores for two systems sharing a scenario difficulty (so pairing matters)."""
    base = rng.uniform(0, 1, n)
    a = np.clip(base + shift + rng.normal(0, 0.25, n), 0, 1)
    b = np.clip(base + rng.normal(0, 0.25, n), 0, 1)
    keys = [f"CD_{i:03d}" for i in range(n)]
    return dict(zip(keys, a)), dict(zip(keys, b))


def test_paired_test_has_power_against_a_real_shift():
    rng = np.random.default_rng(2024)
    rejections = 0
    for i in range(100):
        a, b = _scenario_scores(rng, 60, 0.15)
        res = paired_bootstrap_test(a, b, n_resamples=2000, seed=i)
        rejections += res.p_value < 0.05
        assert res.n_pairs == 60 and res.n_unpaired == 0
    assert rejections >= 75


def test_paired_test_holds_its_level_under_the_null():
    rng = np.random.default_rng(7)
    rejections = 0
    for i in range(200):
        a, b = _scenario_scores(rng, 60, 0.0)
        rejections += paired_bootstrap_test(a, b, n_resamples=2000, seed=i).p_value < 0.05
    assert 0.01 <= rejections / 200 <= 0.10


def test_paired_test_pairs_by_key_not_by_position():
    rng = np.random.default_rng(3)
    a, b = _scenario_scores(rng, 60, 0.15)
    items = list(b.items())
    random.Random(0).shuffle(items)
    shuffled = dict(items)
    assert list(shuffled) != list(b)
    by_key = paired_bootstrap_test(a, shuffled)
    assert by_key == paired_bootstrap_test(a, b)
    # Pairing by position would break the shared scenario difficulty: a wider CI, weaker test.
    positional = paired_bootstrap_test(
        dict(enumerate(a.values())), dict(enumerate(shuffled.values()))
    )
    assert positional.diff == pytest.approx(by_key.diff)
    assert (by_key.ci_high - by_key.ci_low) < 0.8 * (positional.ci_high - positional.ci_low)
    assert by_key.p_value < positional.p_value


def test_paired_test_reports_unpaired_and_missing_keys():
    a = {"s1": 0.5, "s2": 0.7, "s3": 0.2, "only_a": 1.0, "nan_a": float("nan")}
    b = {"s1": 0.1, "s2": 0.6, "s3": 0.0, "only_b1": 0.0, "only_b2": 0.3, "nan_a": 0.4}
    res = paired_bootstrap_test(a, b, n_resamples=1000)
    counts = (res.n_pairs, res.n_only_a, res.n_only_b, res.n_unpaired, res.n_dropped)
    assert counts == (3, 1, 2, 3, 1)
    assert res.diff == pytest.approx(np.mean([0.4, 0.1, 0.2]))
    # n=3 pairs: 2**3 sign patterns are enumerated exactly; all positive -> p = 2/8.
    assert res.p_value == pytest.approx(0.25)
    assert json.loads(json.dumps(res.to_dict(), allow_nan=False))["n_unpaired"] == 3


def test_paired_test_ci_covers_the_shift_and_degenerate_cases():
    a, b = _scenario_scores(np.random.default_rng(11), 200, 0.15)
    res = paired_bootstrap_test(a, b, n_resamples=2000)
    assert res.ci_low < 0.15 < res.ci_high and res.p_value < 0.001
    same = paired_bootstrap_test({"x": 1.0, "y": 0.0}, {"x": 1.0, "y": 0.0})
    assert (same.diff, same.p_value, same.ci_low, same.ci_high) == (0.0, 1.0, 0.0, 0.0)
    none = paired_bootstrap_test({"x": 1.0}, {"y": 1.0})
    assert none.n_pairs == 0 and math.isnan(none.p_value) and none.n_unpaired == 2
    assert none.to_dict()["p_value"] is None


def test_align_by_key_sorts_mixed_keys():
    al = align_by_key({2: "a", "k": "b", 1: "c"}, {1: "x", "k": "y", 3: "z"})
    assert set(al.keys) == {1, "k"} and al.only_a == (2,) and al.only_b == (3,)
    assert dict(zip(al.keys, al.b)) == {1: "x", "k": "y"}


# ---------------------------------------------------------------------------- proportions


def test_wilson_matches_statsmodels_and_the_formula():
    for k, n in [(0, 10), (3, 10), (17, 40), (50, 50)]:
        ci = wilson_ci(k, n)
        low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
        assert (ci.low, ci.high) == pytest.approx((low, high))
        z = sps.norm.ppf(0.975)
        p = k / n
        centre = (p + z * z / (2 * n)) / (1 + z * z / n)
        half = z / (1 + z * z / n) * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
        assert (ci.low, ci.high) == pytest.approx((centre - half, centre + half))
        assert ci.estimate == pytest.approx(p) and ci.n == n
    assert math.isnan(wilson_ci(0, 0).estimate)
    with pytest.raises(ValueError):
        wilson_ci(5, 3)


def test_mcnemar_exact_and_chi_square_by_hand():
    res = mcnemar_test(3, 10)
    assert res.exact and res.p_value == pytest.approx(2 * sps.binom.cdf(3, 13, 0.5))
    res = mcnemar_test(30, 12)
    stat = (abs(30 - 12) - 1) ** 2 / 42
    assert not res.exact
    assert res.statistic == pytest.approx(stat)
    assert res.p_value == pytest.approx(sps.chi2.sf(stat, 1))
    assert mcnemar_test(0, 0).p_value == 1.0


def test_mcnemar_over_paired_outcomes_by_key():
    single = {"s1": True, "s2": True, "s3": False, "s4": True, "s5": False, "only": True}
    multi = {"s5": False, "s4": False, "s3": True, "s2": False, "s1": True}
    res = mcnemar_paired(single, multi)
    assert (res.b, res.c, res.n_pairs, res.n_unpaired) == (2, 1, 5, 1)
    assert res.p_value == pytest.approx(mcnemar_test(2, 1).p_value)


# ---------------------------------------------------------------------------- Rogan-Gladen


def test_rogan_gladen_point_values():
    assert rogan_gladen(0.3, 0.1, 0.2) == pytest.approx((0.3 - 0.1) / (1 - 0.1 - 0.2))
    assert rogan_gladen(0.4, 0.0, 0.0) == pytest.approx(0.4)
    assert rogan_gladen(0.05, 0.1, 0.2) == 0.0  # below the false-positive floor: clipped
    assert rogan_gladen(0.95, 0.1, 0.2) == 1.0
    assert math.isnan(rogan_gladen(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="fpr"):
        rogan_gladen(0.3, 1.2, 0.1)


@pytest.mark.parametrize("method", ["jeffreys", "binomial"])
def test_rogan_gladen_ci_covers_true_prevalence(method):
    prevalence, fpr, fnr = 0.3, 0.1, 0.2
    n_obs, n_neg, n_pos = 300, 100, 100
    rng = np.random.default_rng(99)
    hits = 0
    for i in range(200):
        truth = rng.random(n_obs) < prevalence
        flagged = np.where(truth, rng.random(n_obs) > fnr, rng.random(n_obs) < fpr)
        fp, fn = rng.binomial(n_neg, fpr), rng.binomial(n_pos, fnr)
        ci = rogan_gladen_ci(
            int(flagged.sum()), n_obs, fp, n_neg, fn, n_pos, n_resamples=1000, seed=i, method=method
        )
        assert ci.low <= ci.estimate <= ci.high
        hits += ci.low <= prevalence <= ci.high
    assert hits / 200 >= 0.90


def test_rogan_gladen_ci_propagates_judge_uncertainty():
    small_gold = rogan_gladen_ci(90, 300, 2, 20, 4, 20, seed=0)
    large_gold = rogan_gladen_ci(90, 300, 200, 2000, 400, 2000, seed=0)
    assert small_gold.estimate == pytest.approx(large_gold.estimate)
    assert (small_gold.high - small_gold.low) > 1.5 * (large_gold.high - large_gold.low)
    # Observed-rate uncertainty alone (Wilson, naive) is narrower than with the judge's error.
    naive = wilson_ci(90, 300)
    assert (small_gold.high - small_gold.low) > (naive.high - naive.low)
    # A judge with zero observed false positives still has uncertain FPR under Jeffreys draws.
    zero_fp = rogan_gladen_ci(30, 100, 0, 30, 3, 30, seed=0)
    assert zero_fp.fpr == 0 and zero_fp.low < zero_fp.estimate


def test_rogan_gladen_ci_uninformative_judge_gives_full_interval():
    ci = rogan_gladen_ci(10, 20, 9, 20, 9, 20, seed=0)
    assert ci.n_undefined > 0.05 * ci.n_resamples
    assert (ci.low, ci.high) == (0.0, 1.0)
    with pytest.raises(ValueError, match="fp"):
        rogan_gladen_ci(10, 20, 30, 20, 1, 20)


# ---------------------------------------------------------------------------- clustered units


def _clustered_run(rng, n_clusters, per, mu, rho, fpr, fnr):
    """Leak indicators clustered by scenario (beta-distributed rates, intra-cluster correlation rho),
    judged with known error rates: observed positives per cluster."""
    a, b = mu * (1 - rho) / rho, (1 - mu) * (1 - rho) / rho
    p = rng.beta(a, b, n_clusters)
    truth = rng.random((n_clusters, per)) < p[:, None]
    u = rng.random((n_clusters, per))
    return np.where(truth, u >= fnr, u < fpr).sum(axis=1)


def test_rogan_gladen_cluster_ci_basics():
    ci = rogan_gladen_cluster_ci([(1, 4), (2, 4), (0, 4), (3, 4)], 5, 100, 10, 100, seed=0)
    assert ci.p_obs == pytest.approx(6 / 16) and ci.estimate == pytest.approx(rogan_gladen(6 / 16, 0.05, 0.1))
    assert ci.low < ci.estimate < ci.high and "cluster bootstrap over 4 clusters" in ci.method
    assert ci == rogan_gladen_cluster_ci([(1, 4), (2, 4), (0, 4), (3, 4)], 5, 100, 10, 100, seed=0)  # seeded
    one = rogan_gladen_cluster_ci([(6, 16)], 5, 100, 10, 100, seed=0)  # one cluster: independent units
    assert "one cluster" in one.method and one.estimate == ci.estimate
    # the same units spread over more, more alike clusters give a narrower interval
    alike = rogan_gladen_cluster_ci([(3, 8)] * 8, 5, 100, 10, 100, seed=0)
    assert alike.high - alike.low < ci.high - ci.low
    with pytest.raises(ValueError, match="at least one cluster"):
        rogan_gladen_cluster_ci([(0, 0)], 5, 100, 10, 100)
    with pytest.raises(ValueError, match="positives"):
        rogan_gladen_cluster_ci([(5, 4)], 5, 100, 10, 100)


def test_units_treated_as_independent_undercover_when_leaks_cluster():
    """Why the interval resamples scenarios: with clustered leaks the per-unit interval is too narrow."""
    rng = np.random.default_rng(7)
    mu, fpr, fnr, reps = 0.3, 0.1, 0.2, 200
    indep = clustered = 0
    for r in range(reps):
        k = _clustered_run(rng, 40, 6, mu, 0.3, fpr, fnr)
        fp, fn = rng.binomial(200, fpr), rng.binomial(200, fnr)
        a = rogan_gladen_ci(int(k.sum()), 240, fp, 200, fn, 200, seed=r, n_resamples=1000)
        b = rogan_gladen_cluster_ci([(int(x), 6) for x in k], fp, 200, fn, 200, seed=r, n_resamples=1000)
        indep += a.low <= mu <= a.high
        clustered += b.low <= mu <= b.high
    assert indep / reps < 0.92 < clustered / reps


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_rogan_gladen_cluster_ci_coverage_with_clustered_units():
    """Coverage ≥ 0.93 at nominal 0.95 over 1,000 seeded repeats: 40 scenarios of 6 units, leak rates
    varying by scenario (intra-cluster correlation 0.3), a judge with FPR 0.1 and FNR 0.2 measured
    on 200 + 200 gold items. Every resample is vectorised; about 10 s on 2 cores."""
    rng = np.random.default_rng(2026)
    mu, fpr, fnr, n_gold, reps = 0.3, 0.1, 0.2, 200, 1000
    covered = 0
    widths = []
    for r in range(reps):
        k = _clustered_run(rng, 40, 6, mu, 0.3, fpr, fnr)
        fp, fn = rng.binomial(n_gold, fpr), rng.binomial(n_gold, fnr)
        ci = rogan_gladen_cluster_ci([(int(x), 6) for x in k], fp, n_gold, fn, n_gold, seed=r)
        covered += ci.low <= mu <= ci.high
        widths.append(ci.high - ci.low)
    assert covered / reps >= 0.93, f"coverage {covered / reps:.3f}"
    assert np.median(widths) < 0.4  # and informative


# ---------------------------------------------------------------------------- paired tests too small


def test_paired_tests_with_too_few_pairs_cannot_be_significant():
    """The smallest p-value a sign-flip test over n pairs reaches is 2 / 2**n: with 5 pairs it is
    0.0625, so such tests belong in no Holm family; 6 pairs can reach 0.031."""
    assert min_pairs_for_significance(0.05) == 6 and min_pairs_for_significance(0.01) == 8
    assert not can_reach_significance(1) and not can_reach_significance(5) and can_reach_significance(6)
    for n in (5, 6):
        a = {i: 1.0 + i for i in range(n)}
        b = {i: 0.0 + i for i in range(n)}  # every difference of one sign: the smallest p there is
        p = paired_bootstrap_test(a, b, n_resamples=10000, seed=0).p_value
        assert p == pytest.approx(2 / 2 ** n)
        assert (p < 0.05) == can_reach_significance(n)


# ---------------------------------------------------------------------------- Kendall tau


def test_kendall_tau_matches_scipy_and_pairs_by_key():
    a = {"m1": 0.10, "m2": 0.25, "m3": 0.40, "m4": 0.35, "m5": 0.05}
    b = {"m5": 0.12, "m4": 0.50, "m3": 0.30, "m2": 0.20, "m1": 0.15, "m6": 0.9}
    res = kendall_tau(a, b)
    keys = sorted(a)
    ref = sps.kendalltau([a[k] for k in keys], [b[k] for k in keys])
    assert res.tau == pytest.approx(ref.statistic) and res.p_value == pytest.approx(ref.pvalue)
    assert res.n == 5 and res.n_unpaired == 1
    assert kendall_tau([1, 2, 3, 4], [1, 2, 3, 4]).tau == pytest.approx(1.0)
    assert kendall_tau([1, 2, 3, 4], [4, 3, 2, 1]).tau == pytest.approx(-1.0)
    assert math.isnan(kendall_tau([1], [2]).tau)
    with pytest.raises(ValueError):
        kendall_tau([1, 2], [1, 2, 3])
