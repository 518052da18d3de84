"""Per-category corrected leak rates whose intervals cover, or say "not identified".

A category of a run often has a handful of scenarios. Resampling so few clusters (with the
small-sample t scaling that keeps the pooled interval honest) gives [0, 1] for most categories,
and a category whose judge said "no leak" everywhere gives the degenerate [0, 0]. Here:

- the judge's sensitivity and specificity are the pooled gold estimates (a category has too few
  gold items for its own), drawn from their Jeffreys posteriors, so their uncertainty is carried;
- the category's observed rate is drawn from a Jeffreys posterior on its *effective* counts: the
  units divided by the design effect 1 + (m̄ − 1)·ICC, with the intra-scenario correlation ICC
  estimated on all categories of the same (model, condition) together (one estimate from many
  scenarios, instead of a bootstrap over a few);
- Rogan–Gladen on each draw; the 95% interval is the draws' percentiles. A Jeffreys posterior is
  never a point, so the interval never has zero width; where the correction is not defined for
  more than ``UNDEFINED_MAX`` of the draws (1 − FPR − FNR near 0) or the interval runs from below
  ``VACUOUS_EDGE`` to above 1 − ``VACUOUS_EDGE`` (it says nothing either way), the rate is **not
  identified** and no interval is printed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

NOT_IDENTIFIED = "not identified"
UNDEFINED_MAX = 0.05
VACUOUS_EDGE = 0.05  # an interval from below this to above 1 − this says nothing either way
MIN_DENOMINATOR = 0.05  # 1 − FPR − FNR below this: the draw cannot be corrected


@dataclass(frozen=True)
class CategoryRate:
    estimate: float
    low: float
    high: float
    identified: bool
    design_effect: float
    n_effective: float
    undefined_share: float
    method: str = "Jeffreys draws on design-effect counts, pooled gold FPR/FNR drawn from Jeffreys posteriors"


def design_effect(clusters: Sequence[tuple[int, int]]) -> float:
    """1 + (m̄ − 1)·ICC with the ANOVA estimate of the intra-cluster correlation (at least 1)."""
    arr = np.asarray([(k, n) for k, n in clusters if n > 0], dtype=float).reshape(-1, 2)
    if len(arr) < 2:
        return 1.0
    k, n = arr[:, 0], arr[:, 1]
    N, c = n.sum(), len(n)
    p = k.sum() / N
    if p <= 0 or p >= 1:
        return 1.0
    msb = ((k - n * p) ** 2 / n).sum() / (c - 1)  # between-cluster mean square (Bernoulli units)
    msw = (k - k ** 2 / n).sum() / (N - c) if N > c else 0.0
    n0 = (N - (n ** 2).sum() / N) / (c - 1)
    icc = (msb - msw) / (msb + (n0 - 1) * msw) if (msb + (n0 - 1) * msw) > 0 else 0.0
    icc = min(max(icc, 0.0), 1.0)
    return float(min(max(1.0 + (n.mean() - 1) * icc, 1.0), n.mean()))


def category_rate(k: int, n: int, fp: int, n_neg: int, fn: int, n_pos: int, deff: float = 1.0,
                  n_draws: int = 4000, seed: int = 0, confidence: float = 0.95) -> CategoryRate:
    """The corrected rate of one category (see the module docstring)."""
    if n <= 0 or n_neg <= 0 or n_pos <= 0:
        raise ValueError("need units, gold negatives and gold positives")
    rng = np.random.default_rng(seed)
    n_eff = n / deff
    k_eff = k / deff
    p = rng.beta(k_eff + 0.5, n_eff - k_eff + 0.5, n_draws)
    fpr = rng.beta(fp + 0.5, n_neg - fp + 0.5, n_draws)
    fnr = rng.beta(fn + 0.5, n_pos - fn + 0.5, n_draws)
    den = 1.0 - fpr - fnr
    ok = den >= MIN_DENOMINATOR
    undefined = float(1 - ok.mean())
    corr = np.clip((p[ok] - fpr[ok]) / den[ok], 0.0, 1.0)
    f_hat, r_hat = fp / n_neg, fn / n_pos
    est = float(np.clip((k / n - f_hat) / (1 - f_hat - r_hat), 0, 1)) if 1 - f_hat - r_hat > 0 else float("nan")
    if corr.size == 0:
        return CategoryRate(est, 0.0, 1.0, False, deff, n_eff, undefined)
    a = (1 - confidence) / 2
    low, high = (float(x) for x in np.quantile(corr, [a, 1 - a]))
    if high - low <= 1e-9:  # every draw clipped to one end: bound by the uncorrected draws instead
        raw = np.clip(p[ok] / den[ok], 0.0, 1.0) if low <= 0 else np.clip((p[ok] - fpr[ok]) / 1.0, 0.0, 1.0)
        if low <= 0:
            high = float(max(np.quantile(raw, 1 - a), 1e-6))
        else:
            low = float(min(np.quantile(raw, a), 1 - 1e-6))
    identified = undefined <= UNDEFINED_MAX and not (low < VACUOUS_EDGE and high > 1 - VACUOUS_EDGE)
    return CategoryRate(est, low, high, identified, deff, n_eff, undefined)
