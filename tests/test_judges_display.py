"""Honest small-n display: no ± on few scenarios, the one-scenario note only where there is no
interval, the sign-flip p's Monte Carlo error, and a gold report that names its own methods."""

from __future__ import annotations

import math
from types import SimpleNamespace

from localbench.report.aggregate import Estimate
from localbench.report.tables import SINGLE, Table
from localbench.stats import max_sign_flip_mc_error, paired_bootstrap_test, sign_flip_mc_error


def _text(cell: Estimate) -> str:
    return Table._value_text(SimpleNamespace(fmt="pm"), cell, SimpleNamespace(digits=2, signed=False), False)


def test_few_scenarios_show_bounds_never_plus_minus():
    assert _text(Estimate(1.0, 1.0, 1.0, n=3)) == "1.00 [1.00, 1.00]"  # was "1.00 ± 0.00"
    assert "±" not in _text(Estimate(0.5, 0.4, 0.6, n=4))
    assert _text(Estimate(0.5, 0.4, 0.6, n=10)) == "0.50 ± 0.10"
    # one scenario whose value has a real interval (a Wilson interval over its units): the interval, not the note
    assert _text(Estimate(0.5, 0.2, 0.8, n=1)) == "0.50 [0.20, 0.80]"
    assert _text(Estimate(0.5, 0.5, 0.5, n=1)) == f"0.50 {SINGLE}"


def test_sign_flip_p_states_its_monte_carlo_error():
    a = {i: float(i % 3) for i in range(20)}
    b = {i: float(i % 3) + (0.5 if i % 2 else -0.2) for i in range(20)}
    t = paired_bootstrap_test(a, b, n_resamples=2000, seed=0)
    err = sign_flip_mc_error(t.p_value, t.n_pairs, 2000)
    assert err == math.sqrt(t.p_value * (1 - t.p_value) / 2000) and 0 <= err <= max_sign_flip_mc_error(2000)
    # the same test run with other Monte Carlo seeds stays within a few standard errors
    ps = [paired_bootstrap_test(a, b, n_resamples=2000, seed=s).p_value for s in range(1, 6)]
    assert all(abs(p - t.p_value) <= 5 * max(err, 1e-3) for p in ps)
    assert sign_flip_mc_error(0.25, 8, 2000) == 0.0  # 2^8 ≤ 2000: every sign pattern enumerated, exact
