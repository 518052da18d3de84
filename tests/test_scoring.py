"""The shared score stage as a design declares it: bootstrap or Wilson per metric, sign-flip or
McNemar for the paired comparisons."""

from __future__ import annotations

import pytest
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from localbench.design import Axis, Design, Metric, Role
from localbench.runlog import ScenarioScore
from localbench.scoring import aggregate


def _design(test: str) -> Design:
    return Design(name="t", title="T", axes=(Axis("cat", "Cat", "category", values=("a",)),
                                             Axis("lv", "Lv", "condition", values=("x", "y"), default=("x", "y"))),
                  roles=(Role("agent", ""), Role("judge", "", judge=True)),
                  metrics=(Metric("LEAK", leakage=True, interval="wilson"), Metric("SCORE", unit="score")),
                  headline={"a": "LEAK"}, paired_test=test)  # type: ignore[arg-type]


def _records(x: list[int], y: list[int]) -> list[ScenarioScore]:
    out = []
    for condition, values in (("x", x), ("y", y)):
        for i, v in enumerate(values):
            out.append(ScenarioScore(key=f"s{i}|{condition}|0", scenario=f"s{i}", category="a", condition=condition, model="m",
                                     judge="j", metrics={"LEAK": float(v), "SCORE": v * 0.5}))
    return out


def test_a_proportion_gets_wilson_over_simulations_and_mcnemar_on_the_pairs():
    x = [1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 1]
    y = [0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 1, 1]
    scores = aggregate(_records(x, y), _design("mcnemar"), "r", "j")
    row = scores.get("LEAK", condition="x", category="a")[0]
    low, high = proportion_confint(9, 12, method="wilson")
    assert (row.mean, row.n) == (9 / 12, 12) and row.ci_low == pytest.approx(low) and row.ci_high == pytest.approx(high)
    boot = scores.get("SCORE", condition="x", category="a")[0]
    assert boot.ci_low != pytest.approx(low)  # the other metric keeps the bootstrap
    [comp] = [c for c in scores.comparisons if c.metric == "LEAK"]
    b, c = 6, 1  # x only: s0..s5 (s6, s10, s11 leak in both); y only: s8
    assert comp.test == "mcnemar" and comp.n_pairs == 12
    assert comp.p_value == pytest.approx(mcnemar([[0, b], [c, 0]], exact=True).pvalue)
    assert comp.diff == pytest.approx((sum(y) - sum(x)) / 12)
    sign = aggregate(_records(x, y), _design("sign-flip"), "r", "j").comparisons[0]
    assert sign.test == "sign-flip"  # (on 0/1 outcomes the exact sign-flip test is the sign test: same p)


def test_a_proportion_that_is_not_0_or_1_is_an_error_not_a_rate():
    recs = _records([1, 0], [1, 1])
    recs[0].metrics["LEAK"] = 0.5
    with pytest.raises(ValueError, match="metric 'LEAK' is declared a proportion"):
        aggregate(recs, _design("mcnemar"), "r", "j")
