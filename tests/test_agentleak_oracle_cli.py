"""The oracle agents through the real CLI (`localbench run --agent oracle --judge none`): a preset the
benchmark scripts opens on its scripted backend (no weights, no engine), `--judge none` turns the judge
stage off (tier 3 off, said in the report), and a benchmark that cannot score without a judge refuses it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from localbench.benchmarks.agentleak.scenario import CHANNELS


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localbench.cli", *args], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _pooled(run, metric: str, level: str) -> dict:
    scores = json.loads((run / "scores.json").read_text())
    return next(r for r in scores["rows"] if r["metric"] == metric and r["category"] == "ALL" and r["condition"] == level
                and not r.get("group"))


def test_the_oracle_with_no_judge_prints_elr_0_and_rule_checked_tsr_1(tmp_path):
    r = _cli("run", "--benchmark", "agentleak", "--agent", "oracle", "--judge", "none", "--limit", "1",
             "--out", str(tmp_path), "--run-id", "o", "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    run = tmp_path / "o"
    for level in ("single", "multi"):
        assert _pooled(run, "ELR", level)["mean"] == 0.0 and _pooled(run, "ELR", level)["n"] == 4
        assert _pooled(run, "TSR", level)["mean"] == 1.0
        assert all(_pooled(run, f"CLR:{c}", level)["mean"] == 0.0 for c in CHANNELS)
    lead = r.stdout
    row = next(x for x in lead.splitlines() if x.startswith("| oracle | single |"))
    cells = row.strip(" |").split(" | ")
    assert cells[2].startswith("0.00") and cells[-2].startswith("1.00") and cells[-1] == "not judged", row
    assert "TSR is rule-checked" in lead and "TSR:semantic" in lead
    assert "judging off (--judge none)" in r.stderr
    assert not (run / "judgments.jsonl").exists() or not (run / "judgments.jsonl").read_text().strip()
    spec = (run / "spec.yaml").read_text()
    assert "judge:" in spec and "oracle" in spec  # the scripted agent's provenance, no judge section filled
    report = (run / "report.md").read_text()
    assert "tier 3 off (--judge none)" in report and "No judge (--judge none)" in report


def test_oracle_leaks_c2_with_no_judge_leaks_on_c2_alone(tmp_path):
    r = _cli("run", "--benchmark", "agentleak", "--agent", "oracle-leaks-C2", "--judge", "none", "--limit", "1",
             "--categories", "finance,legal", "--levels", "multi", "--out", str(tmp_path), "--run-id", "c2",
             "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    rates = {c: _pooled(tmp_path / "c2", f"CLR:{c}", "multi")["mean"] for c in CHANNELS}
    assert rates == {c: float(c == "C2") for c in CHANNELS}, rates


def test_no_judge_is_refused_where_scores_need_one_and_a_scripted_agent_never_judges(tmp_path):
    r = _cli("run", "--benchmark", "asb", "--agent", "tiny-random", "--judge", "none", "--limit", "1",
             "--out", str(tmp_path), "--run-id", "a")
    assert r.returncode == 2 and "cannot score without a judge" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "a").exists()
    r = _cli("run", "--benchmark", "agentleak", "--agent", "oracle", "--limit", "1", "--out", str(tmp_path),
             "--run-id", "b")
    assert r.returncode == 2 and "'oracle' is a scripted agent" in r.stderr and "--judge none" in r.stderr, r.stderr
    assert not (tmp_path / "b").exists()
