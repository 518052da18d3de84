"""AgentLeak's report from a run's own traces: the Table VIII and IX structures, attack delivery
beside ASR per family, McNemar pooled / on C1 alone / C1 vs C2 with a footnote naming the test.
Built from oracle traces (no model), so every cell is known."""

from __future__ import annotations

import asyncio

import pytest

from localbench.benchmarks.agentleak import report as R
from localbench.benchmarks.agentleak.design import DESIGN
from localbench.benchmarks.agentleak.loaders import load_scenarios
from localbench.benchmarks.agentleak.oracle import play_oracle
from localbench.benchmarks.agentleak.scoring import scenario_scores
from localbench.report.data import RunData
from localbench.scoring import aggregate

SUITE = [s for s in load_scenarios("builtin", limit=3).scenarios]


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> RunData:
    """single: the perfect oracle; multi: the oracle that leaks one value on C2."""
    async def go():
        return await asyncio.gather(*(play_oracle(s, "single") for s in SUITE),
                                    *(play_oracle(s, "multi", "oracle-leaks-C2") for s in SUITE))
    traces = asyncio.run(go())
    for t in traces:
        t.model = "oracle"
    records = scenario_scores(traces, [], {s.id: s for s in SUITE}, "none", tier3=False)
    scores = aggregate(records, DESIGN, "hand", "none")
    return RunData(path=tmp_path_factory.mktemp("run"), scores=scores, design=DESIGN, scenarios=records)


def _cells(t, level: str) -> dict[str, float | None]:
    row = next(r for r in t.rows if r.labels[-1] == level)
    return {c.header: getattr(cell, "mean", cell) for c, cell in zip(t.columns, row.cells)}


def test_table_viii_and_ix_from_the_runs_traces(run):
    [viii] = R.table_viii(run)
    single, multi = _cells(viii, "single"), _cells(viii, "multi")
    assert set(single.values()) == {0.0}
    multi_agent = sum(s.topology != "single" for s in SUITE) / len(SUITE)  # C2 exists only there
    assert multi["+C2 (C2 ∧ ¬C1)"] == pytest.approx(multi_agent) == multi["ELR (C1 ∨ C2 ∨ C5)"]
    assert multi["C1 only"] == 0.0 and multi["+C5 (C5 ∧ ¬C1 ∧ ¬C2)"] == 0.0
    [ix] = R.table_ix(run)
    assert _cells(ix, "multi")["all verticals"] == pytest.approx(multi_agent)  # C2 leaked, C1 clean: H1


def test_mcnemar_pooled_on_c1_alone_and_c1_vs_c2_name_the_test(run):
    [t] = R.paired_tests(run)
    comps = {(r.labels[1], r.labels[2]): r.cells for r in t.rows}
    assert {("single → multi", "ELR"), ("single → multi", "CLR:C1"), ("C1 → C2 at multi", "CLR")} <= set(comps)
    b_c = comps[("single → multi", "ELR")][3]
    n = sum(s.topology != "single" for s in SUITE)
    assert b_c == f"0, {n}"  # every multi-agent scenario leaked under multi and not under single
    assert comps[("single → multi", "CLR:C1")][3] == "0, 0"
    assert "McNemar" in " ".join(t.notes) and "exact binomial" in " ".join(t.notes)


def test_attack_delivery_is_shown_beside_asr(run):
    [t] = R.attack_table(run)
    headers = [c.header for c in t.columns]
    assert any(h.endswith("delivered") for h in headers) and any(h.endswith("ASR") for h in headers)


def test_judge_warnings_name_failed_ungrounded_and_degenerate_judges():
    from localbench.benchmarks.agentleak.judge_warnings import judge_warnings
    from localbench.benchmarks.agentleak.judges import UNGROUNDED
    from localbench.runlog import Judgment

    def j(i: int, model: str, levels: dict | None, failure: str | None = None) -> Judgment:
        return Judgment(key=f"s{i}|multi|0|leak|C2", sim_key=f"s{i}|multi|0", judge="leak", target="C2",
                        judge_model=model, label=None if failure else {"levels": levels}, failure=failure)

    js = ([j(i, "lazy", {"a": "none", "b": "none"}) for i in range(6)]
          + [j(i, "eager", {"a": "full"}) for i in range(6)]
          + [j(i, "liar", {"a": "none", "b": "partial"}) for i in range(6)]
          + [j(i, "liar", None, f"{UNGROUNDED}: field_1: ...") for i in range(6, 9)]
          + [j(9, "liar", None, "invalid output")])
    got = {(w.judge_model, w.what.split(" ")[0], w.count) for w in judge_warnings(js)}
    assert ("lazy", "every", 6) in got and ("eager", "every", 6) in got
    assert ("liar", "ungrounded", 3) in got and ("liar", "failed", 1) in got
    assert not any(m == "liar" and w == "every" for m, w, _ in got)


def test_the_report_says_when_tier_3_was_off(run):
    [t] = R.judge_warning_table(run)
    # the fixture is scored with judge "none" (`--judge none`): tier 3 off, and the note says so
    assert [r.cells[0] for r in t.rows] == ["tier 3 off (--judge none)"] and "Tier 3 was off" in " ".join(t.notes)
