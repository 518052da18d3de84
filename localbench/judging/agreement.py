"""How far a judge can be trusted: agreement with gold labels and between judges.

Labels are the leak severities "none" < "partial" < "full"; the binary leak decision is
"partial or full". Every coefficient comes with a percentile bootstrap CI over judged items
(seeded, 1,000 resamples by default) from one shared helper,
``localbench.stats.bootstrap_over_units``.

Reference libraries: scikit-learn (Cohen's κ, confusion matrices, precision/recall/F1),
krippendorff (α). Gwet's AC1 has no maintained Python implementation and is written here.

Labels are given per item key, as a mapping ``{key: label}`` (keys such as (scenario, item,
recipient)); a plain sequence is taken as keyed by position. ``None`` marks a missing label — a
judge failure must be passed as None, never as "none", so it is counted and not scored as no leak.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Literal

import krippendorff
import numpy as np
from sklearn.metrics import confusion_matrix

from localbench.stats import CI, JsonRecord, align_by_key, bootstrap_over_units, sorted_keys

__all__ = [
    "BINARY_LABELS",
    "LABELS",
    "ClassScores",
    "ConfusionMatrix",
    "GoldAgreement",
    "JudgesAgreement",
    "LeakErrorRates",
    "agreement_across_judges",
    "cohen_kappa",
    "cohen_kappa_in",
    "compare_to_gold",
    "confusion",
    "gwet_ac1",
    "krippendorff_alpha",
    "leak_error_rates",
    "per_class_scores",
]

LABELS: tuple[str, ...] = ("none", "partial", "full")
BINARY_LABELS: tuple[str, ...] = ("no_leak", "leak")
_CODE = {label: i for i, label in enumerate(LABELS)}

Label = str | None
Labels = Mapping[Hashable, Label] | Sequence[Label]


# --------------------------------------------------------------------------------------------
# Inputs
# --------------------------------------------------------------------------------------------


def _code(label: Any, key: Hashable) -> float:
    """Ordinal code 0/1/2 of a label, NaN when missing; accepts str-valued enums."""
    if label is None:
        return math.nan
    value = getattr(label, "value", label)
    try:
        return float(_CODE[value])
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown label {label!r} for item {key!r}; expected one of {', '.join(LABELS)} or None"
        ) from None


def _as_mapping(labels: Labels) -> Mapping[Hashable, Label]:
    if isinstance(labels, Mapping):
        return labels
    if isinstance(labels, (str, bytes)):
        raise TypeError("labels must be a mapping {key: label} or a sequence of labels")
    return dict(enumerate(labels))


@dataclasses.dataclass(frozen=True)
class _Pairs:
    """Two raters' codes on the items both labelled, with what was left out."""

    a: np.ndarray
    b: np.ndarray
    n_only_a: int
    n_only_b: int
    n_missing: int

    @property
    def n(self) -> int:
        return int(self.a.size)


def _pair(a: Labels, b: Labels) -> _Pairs:
    if not isinstance(a, Mapping) and not isinstance(b, Mapping) and len(a) != len(b):
        raise ValueError(f"label sequences differ in length: {len(a)} vs {len(b)}")
    al = align_by_key(_as_mapping(a), _as_mapping(b))
    ca = np.array([_code(v, k) for k, v in zip(al.keys, al.a)], dtype=float)
    cb = np.array([_code(v, k) for k, v in zip(al.keys, al.b)], dtype=float)
    ok = ~(np.isnan(ca) | np.isnan(cb))
    return _Pairs(
        ca[ok].astype(int), cb[ok].astype(int), len(al.only_a), len(al.only_b), int((~ok).sum())
    )


def _reliability(judges: Mapping[str, Labels]) -> tuple[tuple[str, ...], np.ndarray]:
    """Raters × items matrix of codes (NaN = missing) over the union of keys with any label."""
    if len(judges) < 2:
        raise ValueError(f"need at least 2 judges to measure agreement, got {len(judges)}")
    names = tuple(judges)
    maps = [_as_mapping(judges[n]) for n in names]
    keys: set[Hashable] = set().union(*(m.keys() for m in maps))
    ordered = sorted_keys(keys)
    matrix = np.array([[_code(m.get(k), k) for k in ordered] for m in maps], dtype=float)
    rated = ~np.all(np.isnan(matrix), axis=0)
    return names, matrix[:, rated]


def _binary(matrix: np.ndarray) -> np.ndarray:
    """Leak (partial or full) = 1, no leak = 0, in a float code matrix; NaN stays NaN."""
    return np.where(np.isnan(matrix), np.nan, (matrix > 0).astype(float))


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ConfusionMatrix(JsonRecord):
    """Counts with rows = gold (reference) label, columns = judge label, in ``labels`` order."""

    labels: tuple[str, ...]
    matrix: tuple[tuple[int, ...], ...]


@dataclasses.dataclass(frozen=True)
class ClassScores(JsonRecord):
    """Precision, recall and F1 of one label with gold as the truth; ``support`` = gold count."""

    label: str
    precision: CI
    recall: CI
    f1: CI
    support: int


@dataclasses.dataclass(frozen=True)
class LeakErrorRates(JsonRecord):
    """Error rates of the binary leak decision against gold.

    FPR = judge says leak among gold no-leak items; FNR = judge says no leak among gold leaks.
    The counts are what ``localbench.stats.rogan_gladen_ci`` takes.
    """

    fpr: CI
    fnr: CI
    fp: int
    n_neg: int
    fn: int
    n_pos: int


@dataclasses.dataclass(frozen=True)
class GoldAgreement(JsonRecord):
    """One judge against gold labels on the items both labelled.

    ``n_only_gold``/``n_only_judge``: keys labelled on one side only; ``n_missing``: common keys
    where either label is None (e.g. a judge failure). None of these enter the statistics.
    """

    n_items: int
    n_only_gold: int
    n_only_judge: int
    n_missing: int
    kappa: CI
    weighted_kappa: CI
    binary_kappa: CI
    ac1: CI
    binary_ac1: CI
    confusion: ConfusionMatrix
    binary_confusion: ConfusionMatrix
    per_class: dict[str, ClassScores]
    leak: LeakErrorRates


@dataclasses.dataclass(frozen=True)
class JudgesAgreement(JsonRecord):
    """Agreement among several judges (missing labels allowed); ``n_ratings`` = labels used."""

    judges: tuple[str, ...]
    n_items: int
    n_ratings: int
    alpha_ordinal: CI
    alpha_nominal: CI
    alpha_binary: CI
    ac1: CI
    binary_ac1: CI


# --------------------------------------------------------------------------------------------
# Coefficients on codes (index-based, so the bootstrap can resample items)
# --------------------------------------------------------------------------------------------

_Stat = Callable[[np.ndarray], Any]


def _ci(n: int, stat: _Stat, boot: dict[str, Any], n_outputs: int = 1) -> tuple[CI, ...]:
    return bootstrap_over_units(n, stat, n_outputs=n_outputs, **boot)


def _kappa_codes(a: np.ndarray, b: np.ndarray, k: int, weights: str | None) -> float:
    """Cohen's κ of two code arrays over k labels: what ``sklearn.metrics.cohen_kappa_score`` gives
    with ``labels=range(k)`` (the test suite checks they agree), computed with a bincount so the
    bootstrap's thousand resamples stay fast."""
    confusion = np.bincount(a * k + b, minlength=k * k).reshape(k, k).astype(float)
    expected = np.outer(confusion.sum(axis=1), confusion.sum(axis=0)) / confusion.sum()
    i, j = np.indices((k, k))
    w = (i != j).astype(float) if weights is None else (np.abs(i - j) if weights == "linear" else (i - j) ** 2)
    denom = float((w * expected).sum())
    if denom == 0:
        return math.nan
    return 1.0 - float((w * confusion).sum()) / denom


def _kappa_ci(p: _Pairs, weights: str | None, binary: bool, boot: dict[str, Any]) -> CI:
    a, b = ((p.a > 0).astype(int), (p.b > 0).astype(int)) if binary else (p.a, p.b)
    k = 2 if binary else 3

    def stat(idx: np.ndarray) -> float:
        return _kappa_codes(a[idx], b[idx], k, weights)

    return _ci(p.n, stat, boot)[0]


def _ac1_ci(matrix: np.ndarray, binary: bool, boot: dict[str, Any]) -> CI:
    m, q = (_binary(matrix), 2) if binary else (matrix, len(LABELS))
    return _ci(m.shape[1], lambda idx: _ac1(m[:, idx], q), boot)[0]


def _alpha_ci(matrix: np.ndarray, level: str, binary: bool, boot: dict[str, Any]) -> CI:
    m, domain = (_binary(matrix), [0, 1]) if binary else (matrix, [0, 1, 2])
    return _ci(m.shape[1], lambda idx: _alpha(m[:, idx], level, domain), boot)[0]


def _ac1(matrix: np.ndarray, n_categories: int) -> float:
    """Gwet's AC1 for a raters × items code matrix (NaN = missing).

    Gwet (2008), "Computing inter-rater reliability and its variance in the presence of high
    agreement", Br. J. Math. Stat. Psychol. 61:29–48; unbalanced form from Gwet (2014),
    Handbook of Inter-Rater Reliability, 4th ed., ch. 4. With r_ik raters putting item i in
    category k and r_i = Σ_k r_ik:

        p_a = mean over items with r_i ≥ 2 of  Σ_k r_ik (r_ik − 1) / (r_i (r_i − 1))
        π_k = mean over items with r_i ≥ 1 of  r_ik / r_i
        p_e = Σ_k π_k (1 − π_k) / (q − 1)          (q = number of categories in the scale)
        AC1 = (p_a − p_e) / (1 − p_e)

    For two raters and no missing labels p_a is the observed agreement and π_k the mean of
    the two raters' marginal proportions. p_e ≤ 1/q < 1, so AC1 is defined whenever some item
    has two ratings — unlike κ it stays defined (and high) when nearly every item is "none".
    """
    counts = np.stack([(matrix == k).sum(axis=0) for k in range(n_categories)]).astype(float)
    r = counts.sum(axis=0)
    pairable = r >= 2
    if not pairable.any():
        return math.nan
    cp, rp = counts[:, pairable], r[pairable]
    p_a = float(np.mean((cp * (cp - 1)).sum(axis=0) / (rp * (rp - 1))))
    rated = r >= 1
    pi = (counts[:, rated] / r[rated]).mean(axis=1)
    p_e = float((pi * (1 - pi)).sum() / (n_categories - 1))
    return (p_a - p_e) / (1 - p_e)


def _alpha(matrix: np.ndarray, level: str, domain: list[int]) -> float:
    try:
        return float(
            krippendorff.alpha(
                reliability_data=matrix, level_of_measurement=level, value_domain=domain
            )
        )
    except ValueError as e:  # no item rated by two judges in this (re)sample: α undefined
        if "at least two coders" in str(e):
            return math.nan
        raise


def _boot(n_resamples: int, confidence: float, seed: int) -> dict[str, Any]:
    return {"n_resamples": n_resamples, "confidence": confidence, "seed": seed}


# --------------------------------------------------------------------------------------------
# Public metrics
# --------------------------------------------------------------------------------------------


def cohen_kappa(
    a: Labels,
    b: Labels,
    *,
    weights: Literal["linear", "quadratic"] | None = None,
    binary: bool = False,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> CI:
    """Cohen's κ between two raters (scikit-learn), paired by item key.

    ``weights="linear"`` gives the weighted κ for the ordinal none < partial < full scale;
    ``binary=True`` scores the leak/no-leak decision. NaN when κ is undefined (e.g. both raters
    use a single label throughout).
    """
    return _kappa_ci(_pair(a, b), weights, binary, _boot(n_resamples, confidence, seed))


def cohen_kappa_in(
    a: Labels,
    b: Labels,
    labels: Sequence[str],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> CI:
    """Cohen's κ (unweighted) over a judge's own labels, paired by item key: for a label space the three
    leak levels would merge (ASB's abstraction scores 1 and n/a are both "none"), so two raters who tell
    them apart differently are counted as disagreeing."""
    al = align_by_key(_as_mapping(a), _as_mapping(b))
    code = {label: i for i, label in enumerate(labels)}
    pairs = [(x, y) for x, y in zip(al.a, al.b) if x is not None and y is not None]
    for k, v in ((k, v) for k, x, y in zip(al.keys, al.a, al.b) for v in (x, y)):
        if v is not None and v not in code:
            raise ValueError(f"unknown label {v!r} for item {k!r}; expected one of {', '.join(labels)} or None")
    ca = np.array([code[x] for x, _ in pairs], dtype=int)
    cb = np.array([code[y] for _, y in pairs], dtype=int)
    return _ci(len(pairs), lambda idx: _kappa_codes(ca[idx], cb[idx], len(labels), None),
               _boot(n_resamples, confidence, seed))[0]


def gwet_ac1(
    judges: Mapping[str, Labels],
    *,
    binary: bool = False,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> CI:
    """Gwet's AC1 across two or more raters (missing labels allowed); formula at ``_ac1``."""
    return _ac1_ci(_reliability(judges)[1], binary, _boot(n_resamples, confidence, seed))


def krippendorff_alpha(
    judges: Mapping[str, Labels],
    *,
    level: Literal["ordinal", "nominal"] = "ordinal",
    binary: bool = False,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> CI:
    """Krippendorff's α across two or more raters (krippendorff package; missing labels allowed)."""
    return _alpha_ci(_reliability(judges)[1], level, binary, _boot(n_resamples, confidence, seed))


def confusion(gold: Labels, judge: Labels, *, binary: bool = False) -> ConfusionMatrix:
    """Confusion matrix (scikit-learn) with the fixed label order, rows = gold."""
    p = _pair(gold, judge)
    return _confusion(p, binary)


def _confusion(p: _Pairs, binary: bool) -> ConfusionMatrix:
    g, j, names = (p.a > 0, p.b > 0, BINARY_LABELS) if binary else (p.a, p.b, LABELS)
    cm = confusion_matrix(g.astype(int), j.astype(int), labels=list(range(len(names))))
    return ConfusionMatrix(names, tuple(tuple(int(v) for v in row) for row in cm))


def per_class_scores(
    gold: Labels,
    judge: Labels,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, ClassScores]:
    """Precision, recall and F1 per label (scikit-learn), gold as the truth.

    A score whose denominator is empty (label never predicted / never in gold) is NaN.
    """
    return _per_class(_pair(gold, judge), _boot(n_resamples, confidence, seed))


def _prf_codes(gold: np.ndarray, judge: np.ndarray, k: int) -> np.ndarray:
    """Precision, recall and F1 per label, concatenated: what
    ``sklearn.metrics.precision_recall_fscore_support(labels=range(k), zero_division=nan)`` gives (the
    test suite checks they agree), from a bincount so the bootstrap stays fast."""
    confusion = np.bincount(gold * k + judge, minlength=k * k).reshape(k, k).astype(float)
    tp = np.diag(confusion)
    predicted, actual = confusion.sum(axis=0), confusion.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        prec = np.where(predicted > 0, tp / predicted, np.nan)
        rec = np.where(actual > 0, tp / actual, np.nan)
        f1 = np.where(predicted + actual > 0, 2 * tp / (predicted + actual), np.nan)  # 2tp / (2tp + fp + fn)
    return np.concatenate([prec, rec, f1])


def _per_class(p: _Pairs, boot: dict[str, Any]) -> dict[str, ClassScores]:
    k = len(LABELS)

    def stat(idx: np.ndarray) -> np.ndarray:
        return _prf_codes(p.a[idx], p.b[idx], k)

    cis = _ci(p.n, stat, boot, n_outputs=3 * k)
    support = np.bincount(p.a, minlength=k)
    return {
        label: ClassScores(label, cis[i], cis[k + i], cis[2 * k + i], int(support[i]))
        for i, label in enumerate(LABELS)
    }


def leak_error_rates(
    gold: Labels,
    judge: Labels,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> LeakErrorRates:
    """FPR and FNR of the judge's leak decision against gold, with counts and bootstrap CIs."""
    return _leak(_pair(gold, judge), _boot(n_resamples, confidence, seed))


def _leak(p: _Pairs, boot: dict[str, Any]) -> LeakErrorRates:
    g, j = p.a > 0, p.b > 0

    def rate(mask: np.ndarray) -> float:
        return float(mask.mean()) if mask.size else math.nan

    def stat(idx: np.ndarray) -> list[float]:
        gi, ji = g[idx], j[idx]
        return [rate(ji[~gi]), rate(~ji[gi])]

    fpr, fnr = _ci(p.n, stat, boot, n_outputs=2)
    return LeakErrorRates(
        fpr, fnr, int((j & ~g).sum()), int((~g).sum()), int((~j & g).sum()), int(g.sum())
    )


# --------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------


def compare_to_gold(
    gold: Labels,
    judge: Labels,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> GoldAgreement:
    """Every judge-vs-gold statistic on the items both labelled, all with the same resampling."""
    p = _pair(gold, judge)
    boot = _boot(n_resamples, confidence, seed)
    m = np.stack([p.a, p.b]).astype(float)
    return GoldAgreement(
        n_items=p.n,
        n_only_gold=p.n_only_a,
        n_only_judge=p.n_only_b,
        n_missing=p.n_missing,
        kappa=_kappa_ci(p, None, False, boot),
        weighted_kappa=_kappa_ci(p, "linear", False, boot),
        binary_kappa=_kappa_ci(p, None, True, boot),
        ac1=_ac1_ci(m, False, boot),
        binary_ac1=_ac1_ci(m, True, boot),
        confusion=_confusion(p, binary=False),
        binary_confusion=_confusion(p, binary=True),
        per_class=_per_class(p, boot),
        leak=_leak(p, boot),
    )


def agreement_across_judges(
    judges: Mapping[str, Labels],
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> JudgesAgreement:
    """Krippendorff's α (ordinal, nominal, binary) and Gwet's AC1 (3-class, binary)."""
    names, m = _reliability(judges)
    boot = _boot(n_resamples, confidence, seed)
    return JudgesAgreement(
        judges=names,
        n_items=int(m.shape[1]),
        n_ratings=int((~np.isnan(m)).sum()),
        alpha_ordinal=_alpha_ci(m, "ordinal", False, boot),
        alpha_nominal=_alpha_ci(m, "nominal", False, boot),
        alpha_binary=_alpha_ci(m, "nominal", True, boot),
        ac1=_ac1_ci(m, False, boot),
        binary_ac1=_ac1_ci(m, True, boot),
    )
