"""Contextual sensitivity from the declared table: the paper's example pinned, no random noise, and
the shipped suite labelled by the table."""

from __future__ import annotations

from localbench.benchmarks.sopri.loaders import load_users
from localbench.benchmarks.sopri.scenario import SLOTS
from localbench.benchmarks.sopri.sensitivity import CHILDREN, TABLE, row_for, sensitivity_of


def test_a_minority_orientation_is_more_sensitive_than_the_majority_one():
    """The paper's example: revealing a minority orientation harms more than revealing the majority one."""
    for minority in ("gay", "lesbian", "bisexual"):
        assert sensitivity_of("sexual_orientation", minority, {}) > sensitivity_of("sexual_orientation",
                                                                                   "heterosexual", {})


def test_a_health_condition_or_a_debt_is_more_sensitive_than_its_benign_counterpart():
    assert sensitivity_of("health", "type 1 diabetes", {}) > sensitivity_of("health", "knee injury (in physiotherapy)", {})
    assert sensitivity_of("finances", "in credit card debt", {}) > sensitivity_of("finances", "paying off a car loan", {})
    assert sensitivity_of("religion", "Muslim", {}) > sensitivity_of("religion", "no religion", {})


def test_the_users_context_moves_it():
    parent = {"family": "one son, about 5 years old"}
    assert row_for("home", "x", parent).context == CHILDREN
    assert sensitivity_of("home", "x", parent) > sensitivity_of("home", "x", {"family": "no children"})


def test_every_slot_has_a_row_and_every_row_a_reason():
    assert {r.slot for r in TABLE} == set(SLOTS)
    assert all(r.reason and 1 <= r.sensitivity <= 5 for r in TABLE)


def test_the_shipped_suite_is_labelled_by_the_table_without_noise():
    for u in load_users("builtin").users:
        values = {a.slot: a.value for a in u.profile}
        for a in u.profile:
            assert a.sensitivity == sensitivity_of(a.slot, a.value, values), (u.id, a.slot, a.value)
