"""Statistics for benchmark results: bootstrap CIs, paired tests, proportions, prevalence.

A leaf module: it builds on scipy/statsmodels and imports nothing else from localbench. Every
resampling procedure takes an explicit seed and records it in its result, so a report can be
reproduced number for number. Results are small frozen dataclasses whose ``to_dict()`` gives plain
JSON (NaN and infinities become ``null``).

Units: a "unit" is whatever is independent in the design — for benchmark metrics the scenario
(resampling individual items or turns would understate the variance), for judge agreement the
judged item.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any, Literal

import numpy as np
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as _sm_mcnemar
from statsmodels.stats.proportion import proportion_confint

__all__ = [
    "CI",
    "Aligned",
    "JsonRecord",
    "KendallTau",
    "McNemarResult",
    "PairedTest",
    "PrevalenceCI",
    "align_by_key",
    "bootstrap_ci",
    "bootstrap_over_units",
    "can_reach_significance",
    "kendall_tau",
    "mcnemar_paired",
    "mcnemar_test",
    "min_pairs_for_significance",
    "paired_bootstrap_test",
    "rank_intervals",
    "rogan_gladen",
    "rogan_gladen_ci",
    "rogan_gladen_cluster_ci",
    "sorted_keys",
    "to_jsonable",
    "wilson_ci",
]


# --------------------------------------------------------------------------------------------
# JSON-ready results
# --------------------------------------------------------------------------------------------


def to_jsonable(obj: Any) -> Any:
    """Plain JSON values from dataclasses, numpy scalars/arrays, mappings and sequences.

    Non-finite floats become None (strict JSON has no NaN); mapping keys become strings.
    """
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, (str, int, bool)) or obj is None:
        return obj
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in obj]
    raise TypeError(f"cannot convert {type(obj).__name__} to JSON")


class JsonRecord:
    """Mixin for result dataclasses: ``to_dict()`` gives a JSON-ready dict."""

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(self)


@dataclasses.dataclass(frozen=True)
class CI(JsonRecord):
    """A point estimate with a two-sided confidence interval.

    ``n`` counts the units used; ``n_dropped`` the input values that were NaN/missing;
    ``n_undefined`` the resamples on which the statistic was undefined (e.g. κ with one class).
    """

    estimate: float
    low: float
    high: float
    n: int
    confidence: float = 0.95
    n_resamples: int = 0
    seed: int | None = None
    method: str = "percentile bootstrap"
    n_dropped: int = 0
    n_undefined: int = 0

    @property
    def mean(self) -> float:
        """Alias of ``estimate`` for the common case where the statistic is the mean."""
        return self.estimate

    @property
    def half_width(self) -> float:
        """(high − low) / 2: what a table prints after '±'."""
        return (self.high - self.low) / 2


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")


def _check_resamples(n_resamples: int) -> None:
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples!r}")


# --------------------------------------------------------------------------------------------
# Bootstrap CIs
# --------------------------------------------------------------------------------------------


def bootstrap_ci(
    values: Iterable[float | None],
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    statistic: Callable[..., Any] = np.mean,
) -> CI:
    """Percentile bootstrap CI of ``statistic`` over per-unit (per-scenario) scores.

    NaN/None values are dropped and counted in ``n_dropped``. With no values the estimate and
    interval are NaN; with one value or a constant series the interval has zero width (every
    resample is the same series). Resampling is done by ``scipy.stats.bootstrap``; a statistic
    that accepts ``axis=`` (like ``np.mean``) is evaluated vectorised.
    """
    _check_confidence(confidence)
    _check_resamples(n_resamples)
    x = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)
    x = x.ravel()
    keep = ~np.isnan(x)
    n_dropped = int((~keep).sum())
    x = x[keep]
    n = int(x.size)
    common = {
        "confidence": confidence, "n_resamples": n_resamples, "seed": seed, "n_dropped": n_dropped
    }
    if n == 0:
        return CI(math.nan, math.nan, math.nan, 0, **common)
    estimate = float(statistic(x))
    if n == 1 or np.all(x == x[0]):
        return CI(estimate, estimate, estimate, n, **common)
    # Bound memory at ~16 MB of resampled data per batch.
    batch = max(1, min(n_resamples, 2_000_000 // n))
    res = sps.bootstrap(
        (x,),
        statistic,
        n_resamples=n_resamples,
        confidence_level=confidence,
        method="percentile",
        batch=batch,
        rng=np.random.default_rng(seed),
    )
    low, high = res.confidence_interval
    return CI(estimate, float(low), float(high), n, **common)


def bootstrap_over_units(
    n_units: int,
    statistic: Callable[[np.ndarray], float | Sequence[float] | np.ndarray],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    n_outputs: int = 1,
) -> tuple[CI, ...]:
    """Percentile bootstrap CIs of one or more statistics of a set of units, resampled together.

    ``statistic(idx)`` receives an integer index array into the units (``arange(n_units)`` for
    the point estimate, a resample with replacement otherwise) and returns one value or a vector
    of values. Returns one CI per value. Resamples on which a value is NaN (the statistic is
    undefined there, e.g. κ when only one class was drawn) are left out of that value's
    percentiles and counted in its ``n_undefined``. scipy's bootstrap would turn such a resample
    into a NaN interval, which is why this loop exists. ``n_outputs`` (how many values the
    statistic returns) is only used to shape the all-NaN answer when there are no units.
    """
    _check_confidence(confidence)
    _check_resamples(n_resamples)
    common = {"confidence": confidence, "n_resamples": n_resamples, "seed": seed}
    if n_units <= 0:
        return tuple(CI(math.nan, math.nan, math.nan, 0, **common) for _ in range(n_outputs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        point = np.atleast_1d(np.asarray(statistic(np.arange(n_units)), dtype=float))
        rng = np.random.default_rng(seed)
        reps = np.empty((n_resamples, point.size))
        for r in range(n_resamples):
            reps[r] = np.asarray(statistic(rng.integers(0, n_units, n_units)), dtype=float)
    alpha = (1.0 - confidence) / 2
    out = []
    for j, est in enumerate(point):
        col = reps[:, j]
        defined = col[~np.isnan(col)]
        n_undef = int(col.size - defined.size)
        if math.isnan(est) or defined.size == 0:
            out.append(CI(float(est), math.nan, math.nan, n_units, n_undefined=n_undef, **common))
            continue
        low, high = np.percentile(defined, [100 * alpha, 100 * (1 - alpha)])
        out.append(CI(float(est), float(low), float(high), n_units, n_undefined=n_undef, **common))
    return tuple(out)


# --------------------------------------------------------------------------------------------
# Paired comparisons (aligned by key)
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Aligned:
    """Two keyed series joined on their common keys (sorted, so dict order never matters)."""

    keys: tuple[Hashable, ...]
    a: tuple[Any, ...]
    b: tuple[Any, ...]
    only_a: tuple[Hashable, ...]
    only_b: tuple[Hashable, ...]


def sorted_keys(keys: Iterable[Hashable]) -> list[Hashable]:
    """Keys in a stable order (sorted; by repr when key types mix): dict order never matters."""
    keys = list(keys)
    try:
        return sorted(keys)
    except TypeError:  # mixed key types
        return sorted(keys, key=repr)


def align_by_key(a: Mapping[Hashable, Any], b: Mapping[Hashable, Any]) -> Aligned:
    """Join two mappings on their keys; keys present on one side only are listed, not dropped."""
    common = sorted_keys(a.keys() & b.keys())
    return Aligned(
        keys=tuple(common),
        a=tuple(a[k] for k in common),
        b=tuple(b[k] for k in common),
        only_a=tuple(sorted_keys(a.keys() - b.keys())),
        only_b=tuple(sorted_keys(b.keys() - a.keys())),
    )


@dataclasses.dataclass(frozen=True)
class PairedTest(JsonRecord):
    """Mean paired difference a − b, its CI, and a two-sided p-value for 'no difference'.

    ``n_only_a``/``n_only_b`` count keys present on one side only (they are not used);
    ``n_dropped`` counts common keys where either value was NaN/missing.
    """

    diff: float
    ci_low: float
    ci_high: float
    p_value: float
    n_pairs: int
    n_unpaired: int
    n_only_a: int
    n_only_b: int
    n_dropped: int
    confidence: float
    n_resamples: int
    seed: int
    method: str = "sign-flip permutation test; percentile bootstrap CI of the mean difference"


def sign_flip_mc_error(p: float, n_pairs: int, n_resamples: int) -> float:
    """The Monte Carlo standard error of a sign-flip p-value: 0 when the test enumerates every sign
    pattern (2**n_pairs <= n_resamples, as ``scipy.stats.permutation_test`` does then), else
    sqrt(p (1 − p) / n_resamples), the binomial error of a share of random sign flips."""
    if n_pairs <= 0 or not math.isfinite(p):
        return math.nan
    if n_pairs < 63 and 2 ** n_pairs <= n_resamples:
        return 0.0
    return math.sqrt(max(p * (1 - p), 0.0) / n_resamples)


def max_sign_flip_mc_error(n_resamples: int) -> float:
    """The largest Monte Carlo standard error any sign-flip p-value can have (at p = 0.5)."""
    return 0.5 / math.sqrt(n_resamples)


def paired_bootstrap_test(
    a: Mapping[Hashable, float | None],
    b: Mapping[Hashable, float | None],
    n_resamples: int = 10000,
    seed: int = 0,
    confidence: float = 0.95,
) -> PairedTest:
    """Compare two systems scored on the same units (scenario ids), paired by key.

    The CI is a percentile bootstrap of the mean of the per-key differences. The p-value comes
    from a paired randomisation (sign-flip) test via ``scipy.stats.permutation_test``: under the
    null that the two systems are exchangeable within each unit, each difference is equally
    likely to have either sign, which gives a test that holds its level (exact enumeration when
    2**n_pairs <= n_resamples). Unlike resampling the raw differences and counting
    |mean*| >= |observed|, this null is centred, so the p-value is calibrated.
    """
    _check_confidence(confidence)
    _check_resamples(n_resamples)
    al = align_by_key(a, b)
    x = np.asarray(al.a, dtype=float)
    y = np.asarray(al.b, dtype=float)
    keep = ~(np.isnan(x) | np.isnan(y))
    x, y = x[keep], y[keep]
    n = int(x.size)
    common = {
        "n_pairs": n,
        "n_unpaired": len(al.only_a) + len(al.only_b),
        "n_only_a": len(al.only_a),
        "n_only_b": len(al.only_b),
        "n_dropped": int((~keep).sum()),
        "confidence": confidence,
        "n_resamples": n_resamples,
        "seed": seed,
    }
    if n == 0:
        return PairedTest(math.nan, math.nan, math.nan, math.nan, **common)
    d = x - y
    ci = bootstrap_ci(d, n_resamples=n_resamples, confidence=confidence, seed=seed)
    if np.all(d == 0):
        p = 1.0
    elif n < 2:
        p = math.nan  # one pair carries no information about its sign under the null
    else:
        res = sps.permutation_test(
            (x, y),
            lambda u, v, axis: np.mean(u - v, axis=axis),
            permutation_type="samples",
            vectorized=True,
            n_resamples=n_resamples,
            alternative="two-sided",
            rng=np.random.default_rng(seed),
        )
        p = float(res.pvalue)
    return PairedTest(float(d.mean()), ci.low, ci.high, p, **common)


def min_pairs_for_significance(alpha: float = 0.05) -> int:
    """The fewest pairs with which the two-sided sign-flip test can give p < ``alpha``.

    With n pairs the smallest p-value the exact test reaches is 2 / 2**n (every difference of one
    sign), so n must satisfy 2**(n - 1) > 1 / alpha: 6 pairs at alpha = 0.05 (p ≥ 0.031), while 5
    pairs can never go below 0.0625. Tests with fewer pairs are reported but belong in no multiple-
    testing family: they cannot be significant, and counting them only makes the others' correction
    stricter.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    n = 1
    while 2.0 / 2 ** n >= alpha:
        n += 1
    return n


def can_reach_significance(n_pairs: int, alpha: float = 0.05) -> bool:
    """Whether a paired sign-flip test over ``n_pairs`` can reach p < ``alpha`` at all."""
    return n_pairs >= min_pairs_for_significance(alpha)


# --------------------------------------------------------------------------------------------
# Proportions
# --------------------------------------------------------------------------------------------


def wilson_ci(k: int, n: int, confidence: float = 0.95) -> CI:
    """Wilson score interval for k successes out of n (statsmodels); NaN when n == 0."""
    _check_confidence(confidence)
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k!r}, n={n!r}")
    if n == 0:
        return CI(math.nan, math.nan, math.nan, 0, confidence=confidence, method="wilson")
    low, high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    return CI(k / n, float(low), float(high), int(n), confidence=confidence, method="wilson")


@dataclasses.dataclass(frozen=True)
class McNemarResult(JsonRecord):
    """McNemar's test on discordant pairs: b = a-only successes, c = b-only successes."""

    b: int
    c: int
    statistic: float
    p_value: float
    exact: bool
    n_pairs: int | None = None
    n_unpaired: int | None = None


def mcnemar_test(b: int, c: int, exact: bool | None = None) -> McNemarResult:
    """McNemar's test from the two discordant counts (statsmodels).

    ``exact=None`` picks the exact binomial test when b + c < 25 and the continuity-corrected
    chi-square otherwise. With no discordant pairs there is no evidence of a difference: p = 1.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b!r}, c={c!r}")
    if exact is None:
        exact = (b + c) < 25
    if b + c == 0:
        return McNemarResult(int(b), int(c), 0.0, 1.0, exact)
    res = _sm_mcnemar([[0, b], [c, 0]], exact=exact, correction=True)
    return McNemarResult(int(b), int(c), float(res.statistic), float(res.pvalue), exact)


def mcnemar_paired(
    a: Mapping[Hashable, bool], b: Mapping[Hashable, bool], exact: bool | None = None
) -> McNemarResult:
    """McNemar's test over paired binary outcomes, paired by key (e.g. scenario id)."""
    al = align_by_key(a, b)
    xa = np.asarray(al.a, dtype=bool)
    xb = np.asarray(al.b, dtype=bool)
    res = mcnemar_test(int((xa & ~xb).sum()), int((~xa & xb).sum()), exact=exact)
    return dataclasses.replace(
        res, n_pairs=len(al.keys), n_unpaired=len(al.only_a) + len(al.only_b)
    )


# --------------------------------------------------------------------------------------------
# Prevalence correction for an imperfect judge
# --------------------------------------------------------------------------------------------


def _check_rate(name: str, value: float) -> None:
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")


def rogan_gladen(p_obs: float, fpr: float, fnr: float) -> float:
    """True prevalence from an observed positive rate and the judge's FPR/FNR (Rogan & Gladen 1978).

    prevalence = (p_obs − FPR) / (1 − FPR − FNR), clipped to [0, 1]. NaN when FPR + FNR >= 1:
    such a judge is no better than chance and its labels say nothing about prevalence.
    """
    for name, v in (("p_obs", p_obs), ("fpr", fpr), ("fnr", fnr)):
        _check_rate(name, v)
    denom = 1.0 - fpr - fnr
    if denom <= 0:
        return math.nan
    return float(min(1.0, max(0.0, (p_obs - fpr) / denom)))


@dataclasses.dataclass(frozen=True)
class PrevalenceCI(JsonRecord):
    """Rogan–Gladen corrected prevalence with an interval that includes the judge's error."""

    estimate: float
    low: float
    high: float
    p_obs: float
    fpr: float
    fnr: float
    n_obs: int
    n_neg: int
    n_pos: int
    confidence: float
    n_resamples: int
    n_undefined: int
    seed: int
    method: str


def _draw_rates(
    rng: np.random.Generator, k: int, n: int, size: int, method: str
) -> np.ndarray:
    if method == "jeffreys":
        return rng.beta(k + 0.5, n - k + 0.5, size)
    return rng.binomial(n, k / n, size) / n


def rogan_gladen_ci(
    k_obs: int,
    n_obs: int,
    fp: int,
    n_neg: int,
    fn: int,
    n_pos: int,
    confidence: float = 0.95,
    n_resamples: int = 4000,
    seed: int = 0,
    method: Literal["jeffreys", "binomial"] = "jeffreys",
) -> PrevalenceCI:
    """Corrected prevalence and a CI propagating the uncertainty of all three measured rates.

    Inputs are counts: ``k_obs`` positives among ``n_obs`` judged units; the judge's ``fp`` false
    positives among ``n_neg`` gold negatives and ``fn`` false negatives among ``n_pos`` gold
    positives. Method: parametric bootstrap over the three independent binomials. Each draw
    takes the three rates, applies :func:`rogan_gladen` (clipped), and the interval is the
    percentile interval of the draws. With ``method="jeffreys"`` (default) the rates are drawn
    from their Jeffreys posteriors Beta(k + ½, n − k + ½) rather than Binomial(n, k/n)/n, so a
    count of 0 (a judge with no observed false positives) still carries its uncertainty instead
    of being treated as exact.

    Draws where FPR + FNR >= 1 are undefined and counted in ``n_undefined``. If they exceed the
    interval's tail mass (1 − confidence), the data cannot rule out an uninformative judge and
    the interval is reported as [0, 1].
    """
    _check_confidence(confidence)
    _check_resamples(n_resamples)
    for name, k, n in (("k_obs", k_obs, n_obs), ("fp", fp, n_neg), ("fn", fn, n_pos)):
        if n <= 0 or not 0 <= k <= n:
            raise ValueError(f"{name} must be a count in [0, n] with n > 0, got {k!r} of {n!r}")
    if method not in ("jeffreys", "binomial"):
        raise ValueError(f"method must be 'jeffreys' or 'binomial', got {method!r}")
    p_obs, fpr, fnr = k_obs / n_obs, fp / n_neg, fn / n_pos
    estimate = rogan_gladen(p_obs, fpr, fnr)
    rng = np.random.default_rng(seed)
    p_d = _draw_rates(rng, k_obs, n_obs, n_resamples, method)
    fpr_d = _draw_rates(rng, fp, n_neg, n_resamples, method)
    fnr_d = _draw_rates(rng, fn, n_pos, n_resamples, method)
    low, high, n_undef = _corrected_percentiles(p_d, fpr_d, fnr_d, confidence, n_resamples)
    return PrevalenceCI(
        estimate, low, high, p_obs, fpr, fnr, n_obs, n_neg, n_pos, confidence, n_resamples,
        n_undef, seed, f"parametric bootstrap ({method})",
    )


def _corrected_percentiles(p_d: np.ndarray, fpr_d: np.ndarray, fnr_d: np.ndarray, confidence: float,
                           n_resamples: int) -> tuple[float, float, int]:
    """The percentile interval of Rogan–Gladen corrected draws, and how many draws were undefined
    (FPR + FNR ≥ 1). Too many undefined draws, or none defined, give the uninformative [0, 1]."""
    denom = 1.0 - fpr_d - fnr_d
    defined = denom > 0
    n_undef = int((~defined).sum())
    draws = np.clip((p_d[defined] - fpr_d[defined]) / denom[defined], 0.0, 1.0)
    alpha = (1.0 - confidence) / 2
    if n_undef > (1.0 - confidence) * n_resamples or draws.size == 0:
        return 0.0, 1.0, n_undef
    low, high = (float(v) for v in np.percentile(draws, [100 * alpha, 100 * (1 - alpha)]))
    return low, high, n_undef


def rogan_gladen_cluster_ci(
    clusters: Sequence[tuple[int, int]],
    fp: int,
    n_neg: int,
    fn: int,
    n_pos: int,
    confidence: float = 0.95,
    n_resamples: int = 4000,
    seed: int = 0,
) -> PrevalenceCI:
    """Rogan–Gladen corrected pooled prevalence when the judged units come in clusters.

    ``clusters`` gives (positives, units) per cluster — per scenario, whose units (items, or
    (item, recipient) pairs) share a transcript, so their leaks are correlated. The estimate is the
    pooled rate Σk / Σn corrected with FPR = fp / n_neg and FNR = fn / n_pos. The interval is a
    percentile bootstrap that resamples whole clusters for the observed rate (a scenario's units stay
    together), with FPR and FNR drawn from their Jeffreys posteriors, as :func:`rogan_gladen_ci`
    does. Over C clusters the resampled rates are spread around the estimate by √(C / (C − 1)) ·
    t(C − 1) / z, the usual small-sample corrections (the bootstrap's variance is (C − 1) / C of the
    truth, and a mean of C clusters is t-distributed), so a run of few scenarios gets the wide
    interval it deserves. Treating clustered units as independent makes the interval too narrow
    (coverage near 0.90 at nominal 0.95 with typical clustering); this keeps it near nominal. With
    one cluster there is nothing to resample and its units are treated as independent (Jeffreys
    draws of the pooled rate); ``method`` says which was used. Vectorised: all resamples at once.
    """
    _check_confidence(confidence)
    _check_resamples(n_resamples)
    arr = np.asarray([(k, n) for k, n in clusters if n > 0], dtype=float).reshape(-1, 2)
    if arr.size == 0:
        raise ValueError("need at least one cluster with units")
    k, n = arr[:, 0], arr[:, 1]
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("each cluster needs 0 <= positives <= units")
    for name, kk, nn in (("fp", fp, n_neg), ("fn", fn, n_pos)):
        if nn <= 0 or not 0 <= kk <= nn:
            raise ValueError(f"{name} must be a count in [0, n] with n > 0, got {kk!r} of {nn!r}")
    k_obs, n_obs = int(k.sum()), int(n.sum())
    p_obs, fpr, fnr = k_obs / n_obs, fp / n_neg, fn / n_pos
    estimate = rogan_gladen(p_obs, fpr, fnr)
    rng = np.random.default_rng(seed)
    c = k.size
    if c >= 2:
        weights = rng.multinomial(c, np.full(c, 1.0 / c), size=n_resamples).astype(float)
        p_d = (weights @ k) / (weights @ n)
        # small-sample correction of a bootstrap over c clusters: the variance factor c / (c − 1)
        # and Student's t with c − 1 degrees of freedom in place of the normal quantile
        z = sps.norm.ppf(0.5 + confidence / 2)
        inflate = math.sqrt(c / (c - 1)) * sps.t.ppf(0.5 + confidence / 2, c - 1) / z
        p_d = np.clip(p_obs + (p_d - p_obs) * inflate, 0.0, 1.0)
        how = f"cluster bootstrap over {c} clusters (t-scaled), Jeffreys draws of FPR/FNR"
    else:
        p_d = _draw_rates(rng, k_obs, n_obs, n_resamples, "jeffreys")
        how = "parametric bootstrap (jeffreys): one cluster, its units treated as independent"
    fpr_d = _draw_rates(rng, fp, n_neg, n_resamples, "jeffreys")
    fnr_d = _draw_rates(rng, fn, n_pos, n_resamples, "jeffreys")
    low, high, n_undef = _corrected_percentiles(p_d, fpr_d, fnr_d, confidence, n_resamples)
    return PrevalenceCI(estimate, low, high, p_obs, fpr, fnr, n_obs, n_neg, n_pos, confidence, n_resamples,
                        n_undef, seed, how)


def ranks_of(means: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Rank of each system by its mean (1 = best; ties share the better rank, NaN ranks last)."""
    key = np.where(np.isnan(means), np.inf, -means if higher_is_better else means)
    return sps.rankdata(key, method="min").astype(float)


def rank_intervals(
    values: Sequence[Sequence[float]],
    higher_is_better: bool = False,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[CI, ...]:
    """Each system's rank by its mean, with a percentile bootstrap interval of that rank.

    ``values[u][s]``: system s's value on unit u (a scenario every system ran). Units are resampled
    together (one resample for every system, as paired data), so the interval says how sure the
    ranking is given these units: a model whose interval is [1, 1] was best in 97.5% of resamples.
    """
    x = np.asarray(values, dtype=float)
    if x.ndim != 2:
        raise ValueError("values must be units × systems")
    return bootstrap_over_units(
        x.shape[0], lambda idx: ranks_of(np.nanmean(x[idx], axis=0), higher_is_better),
        n_resamples=n_resamples, confidence=confidence, seed=seed, n_outputs=x.shape[1])


# --------------------------------------------------------------------------------------------
# Rank agreement
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class KendallTau(JsonRecord):
    """Kendall's τ-b between two rankings (or scores) of the same systems."""

    tau: float
    p_value: float
    n: int
    n_unpaired: int = 0


def kendall_tau(
    rank_a: Mapping[Hashable, float] | Sequence[float],
    rank_b: Mapping[Hashable, float] | Sequence[float],
) -> KendallTau:
    """Kendall's τ-b (scipy; handles ties). Mappings are paired by key, sequences by position.

    Pass scores or ranks: τ only depends on order. NaN when fewer than 2 systems are shared or a
    ranking is constant.
    """
    if isinstance(rank_a, Mapping) and isinstance(rank_b, Mapping):
        al = align_by_key(rank_a, rank_b)
        x, y, n_unpaired = list(al.a), list(al.b), len(al.only_a) + len(al.only_b)
    elif isinstance(rank_a, Mapping) or isinstance(rank_b, Mapping):
        raise TypeError("pass two mappings (paired by key) or two sequences (paired by position)")
    else:
        x, y = list(rank_a), list(rank_b)
        if len(x) != len(y):
            raise ValueError(f"rankings differ in length: {len(x)} vs {len(y)}")
        n_unpaired = 0
    if len(x) < 2:
        return KendallTau(math.nan, math.nan, len(x), n_unpaired)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = sps.kendalltau(x, y, variant="b")
    return KendallTau(float(res.statistic), float(res.pvalue), len(x), n_unpaired)
