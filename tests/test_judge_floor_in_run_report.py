"""A run's judge measured below the cheater floor (issue 31 item 3): with the eval that measured it
(spec ``judge_eval``, ``--judge-eval``), the run report's judge warnings say so; a rejudge holds the
run's lock."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from localbench.cli import app

pytestmark = pytest.mark.timeout(600)


def _invoke(*args: str):
    res = CliRunner().invoke(app, list(args), catch_exceptions=False)
    assert res.exit_code == 0, res.output
    return res


def _gold(tmp_path):
    from localbench.benchmarks.asb.loaders import load_scenarios
    from localbench.benchmarks.asb.planting import build_gold
    from localbench.judging.gold import write_gold

    items = build_gold(load_scenarios("builtin", ["CD"], limit=1).scenarios, seed=0, methods=["verbatim", "absent"])
    return write_gold(tmp_path / "gold.jsonl", items)


def test_a_tiny_random_run_scored_with_its_judges_eval_warns_of_the_cheater_floor(tmp_path, tiny_dir):
    gold = _gold(tmp_path)
    ev = tmp_path / "ev"  # tiny-random judged on gold a substring rule gets right: never above that floor
    _invoke("judges", "eval", "--judges", "tiny-random", "--gold", str(gold), "--out", str(ev), "--engine", "hf",
            "--max-tokens", "200")
    rel = json.loads((ev / "reliability.json").read_text())
    assert rel["judges"][0]["gold"]["binary_kappa"] and rel["floors"]
    run = tmp_path / "runs" / "tiny"
    res = _invoke("run", "--agent", "tiny-random", "--engine", "hf", "--categories", "CD", "--conditions", "L0",
                  "--limit", "1", "--max-rounds", "1", "--out", str(run.parent), "--run-id", "tiny", "--no-progress")
    # the default judge is the agent's model: said when judging starts and in the closing lines (issue 45 item 4)
    own = "warning: self-judging: the judge (tiny-random) is also the agent's model"
    assert own in res.stderr and own in res.stdout.split("run directory: ")[0].splitlines()[-1]
    assert "not above the best cheater" not in (run / "report.md").read_text()  # no eval given: no floor warning
    _invoke("report", str(run), "--judge-eval", str(ev))  # shown in the report, scores.json left as it was
    assert "- tiny-random: binary κ" in (run / "report.md").read_text()
    assert "below_cheater_floor" not in (run / "scores.json").read_text()
    _invoke("score", str(run), "--judge-eval", str(ev))
    warn = [w for w in json.loads((run / "scores.json").read_text())["judge_warnings"]
            if w["pattern"] == "below_cheater_floor"]
    assert len(warn) == 1 and warn[0]["judge_model"] == "tiny-random"
    _invoke("report", str(run))
    md = (run / "report.md").read_text()
    head = md.split("**Judge warnings**", 1)[1].split("\n\n", 2)[1]  # the section's list
    assert "- tiny-random: binary κ" in head and "not above the best cheater's (" in head
    assert "not above the best cheater" in (run / "report.html").read_text()


def test_a_rejudge_with_a_judge_eval_warns_and_holds_the_run_lock(tmp_path):
    from localbench.benchmarks.asb.planting import write_planted_run

    gold = _gold(tmp_path)
    ev = tmp_path / "ev"
    _invoke("judges", "eval", "--judge", "oracle", "--judge", "noisy:0.45,0.45", "--gold", str(gold), "--out", str(ev))
    run = write_planted_run(tmp_path / "runs" / "planted", "builtin", {"a": 0.2}, seed=1, categories=["CD"])
    _invoke("judges", "rejudge", str(run), "--judge", "noisy:0.45,0.45", "--judge", "oracle", "--judge-eval", str(ev))
    noisy = json.loads((run / "judges" / "noisy:0.45,0.45" / "scores.json").read_text())["judge_warnings"]
    assert [w["judge_model"] for w in noisy] == ["noisy:0.45,0.45"] and "not above" in noisy[0]["message"]
    oracle = json.loads((run / "judges" / "oracle" / "scores.json").read_text())["judge_warnings"]
    assert [w["judge_model"] for w in oracle] == ["oracle"]  # 1.00 ties the substring rule's 1.00: not above

    # a second process is refused while a rejudge holds the run
    held = tmp_path / "held"
    code = (f"import time, pathlib, localbench.rejudge as rj\n"
            f"orig = rj.rejudge_one\n"
            f"async def slow(*a, **k):\n"
            f"    pathlib.Path({str(held)!r}).write_text('x'); time.sleep(30); return await orig(*a, **k)\n"
            f"rj.rejudge_one = slow\n"
            f"rj.rejudge({str(run)!r}, ['noisy:0.2,0.2'])\n")
    p = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not held.exists():
            assert p.poll() is None and time.monotonic() < deadline, p.stderr.read() if p.poll() is not None else ""
            time.sleep(0.05)
        r = subprocess.run([sys.executable, "-m", "localbench.cli", "judges", "rejudge", str(run), "--judge",
                            "oracle"], capture_output=True, text=True, timeout=120)
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
        assert str(p.pid) in r.stderr, r.stderr[-2000:]
    finally:
        p.kill()
        p.wait()
