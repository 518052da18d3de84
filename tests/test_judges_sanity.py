"""Sanity checks on a run's judges (judging/sanity.py with ASB's declaration): degenerate answers are
found and stored in scores.json as warnings, never dropped.

tests/golden/asb-v1-run is the recorded embedded-default run; its 135M judge is degenerate, and the
checks must say so on that real data."""

from __future__ import annotations

from pathlib import Path

from localbench.registry import get_benchmark
from localbench.benchmarks.asb.judges import judge_checks
from localbench.judging.sanity import MIN_SIMULATIONS, JudgeChecks, check_judgments
from localbench.runlog import Judgment, read_records

RECORDED = Path(__file__).resolve().parent / "golden" / "asb-v1-run"


def _j(sim: str, judge: str, label, model="m", failure=None) -> Judgment:
    return Judgment(key=f"{sim}|{judge}|all", sim_key=sim, judge=judge, target="all", judge_model=model, label=label,
                    failure=failure)


def test_the_recorded_embedded_default_judge_is_flagged():
    """Every behaviour flag true in all 14 simulations; TCQ 1.0 with "not completed"; IAS all n/a."""
    warnings = check_judgments(read_records(RECORDED / "judgments.jsonl", Judgment), get_benchmark("asb").judge_checks())
    got = {(w.judge, w.pattern): w for w in warnings}
    assert set(got) == {("behaviour", "constant"), ("behaviour", "contradiction"), ("task", "contradiction"),
                        ("abstraction", "undefined")}
    const = got[("behaviour", "constant")]
    assert (const.count, const.total, const.judge_model) == (14, 14, "smollm2-135m")
    assert "same answer in all 14 simulations" in const.message and "every field true" in const.message
    assert {"NEG", "POS", "B:oversharing"} <= set(const.metrics) and len(const.examples) == 3
    flags = got[("behaviour", "contradiction")]
    assert (flags.count, flags.total) == (14, 14) and "oversharing + minimal_disclosure" in flags.message
    task = got[("task", "contradiction")]
    assert (task.count, task.total) == (5, 14) and "TCQ 1.0 but not completed" in task.message
    assert task.metrics == ["TCQ", "Task%"]
    ias = got[("abstraction", "undefined")]
    assert (ias.count, ias.total, ias.unit) == (72, 73, "answers") and "IAS is undefined in 12 of the 13" in ias.message


def _flags(over: bool, minimal: bool, other: bool = False) -> dict:
    return {"flags": {"oversharing": over, "minimal_disclosure": minimal, "deflection": other,
                      "unnecessary_context": False}, "evidence": "x"}


def test_a_judge_that_reads_gets_no_warning():
    js = [_j(f"s{i}", "behaviour", _flags(i % 3 == 0, i % 3 == 1, i % 2 == 0)) for i in range(12)]
    js += [_j(f"s{i}", "task", {"task_completed": i % 2 == 0, "tcq": [0.25, 0.5, 1.0][i % 3] if i % 2 == 0 else 0.5,
                                "justification": "j"}) for i in range(12)]
    js += [_j(f"s{i}", "abstraction", {"scores": {"1": [0.5, 1.0, 0.0][i % 3], "2": None, "3": 1.0}}) for i in range(12)]
    assert check_judgments(js, judge_checks()) == []


def test_constant_needs_enough_simulations_and_skips_exempt_failed_and_rule_answers():
    same = _flags(True, False)
    assert check_judgments([_j(f"s{i}", "behaviour", same) for i in range(MIN_SIMULATIONS - 1)], judge_checks()) == []
    js = [_j(f"s{i}", "behaviour", same) for i in range(MIN_SIMULATIONS)]
    assert [w.pattern for w in check_judgments(js, judge_checks())] == ["constant"]
    # a privacy judge that finds no leak anywhere may be right: exempt; rule labels and failures are not answers
    privacy = [_j(f"s{i}", "privacy", {"levels": {"a": "none", "b": "none"}, "evidence": {}}) for i in range(20)]
    ruled = [_j(f"r{i}", "behaviour", _flags(False, True), model="rule") for i in range(20)]
    failed = [_j(f"f{i}", "behaviour", None, failure="cut by max_tokens") for i in range(20)]
    assert [w.pattern for w in check_judgments(js + privacy + ruled + failed, judge_checks())] == ["constant"]
    # without the benchmark's exemption the generic check sees privacy's constant answer too
    generic = check_judgments(privacy, JudgeChecks())
    assert [(w.judge, w.pattern) for w in generic] == [("privacy", "constant")]
    assert "every field \"none\"" in generic[0].message


def test_contradictions_are_warned_from_a_share_of_simulations():
    js = [_j(f"s{i}", "behaviour", _flags(i == 0, True, i % 2 == 0)) for i in range(20)]  # 1 of 20: 5%
    assert check_judgments(js, judge_checks()) == []
    js = [_j(f"s{i}", "behaviour", _flags(i < 3, True, i % 2 == 0)) for i in range(20)]  # 3 of 20: 15%
    [w] = check_judgments(js, judge_checks())
    assert (w.pattern, w.count, w.total) == ("contradiction", 3, 20) and w.examples == ["s0", "s1", "s2"]
    done = [_j(f"s{i}", "task", {"task_completed": True, "tcq": 0.0 if i < 4 else 0.75, "justification": ""})
            for i in range(10)]
    [w] = check_judgments(done, judge_checks())
    assert "TCQ 0 but completed" in w.message and (w.count, w.total) == (4, 10)


def test_the_toy_benchmark_declares_its_checks(toy_registered):
    """Every benchmark answers judge_checks(); the test-only one keeps the contract's default, the generic check."""
    checks = get_benchmark("toy").judge_checks()
    assert checks == JudgeChecks()
    js = [_j(f"s{i}", "secret", {"levels": {f"x{i}": "full"}, "evidence": {}}) for i in range(6)]
    assert check_judgments(js, checks) == []  # per-item labels about different things: nothing to compare
