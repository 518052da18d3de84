"""Pipelined judging (#33): when agent and judge are one model on one engine, `run` sends each
simulation's judge calls as soon as it ends; the judgments, scores and stage summaries are the ones
the staged judge stage gives, and a resumed run finishes the same way."""

from __future__ import annotations

import json

import pytest

from localbench.pipeline import pipelined, run_all
from localbench.spec import load_spec


def _spec(out, **more):
    return load_spec(None, out=str(out), categories=["CD", "MC"], conditions=["L0"], limit=1, max_tokens=24,
                     judge_max_tokens=48, max_rounds={"CD": 1, "MC": 1}, no_cache=True,
                     **{"models.agent": "tiny-random", "serving.engine": "hf"}, **more)


def _judgments(run_dir) -> dict[str, tuple]:
    out = {}
    for line in (run_dir / "judgments.jsonl").read_text().splitlines():
        j = json.loads(line)
        out[j["key"]] = (j["judge"], j["target"], json.dumps(j["label"], sort_keys=True), j["failure"], j["text"])
    return out


@pytest.mark.slow
def test_pipelined_judging_gives_the_judgments_of_staged_judging(tmp_path, tiny_dir, monkeypatch, capsys):
    staged_spec, piped_spec = _spec(tmp_path / "staged"), _spec(tmp_path / "piped")
    assert pipelined(piped_spec)
    monkeypatch.setenv("LOCALBENCH_STAGED_JUDGING", "1")
    assert not pipelined(staged_spec)
    run_all(staged_spec, progress=False)
    staged_log = capsys.readouterr().err
    monkeypatch.delenv("LOCALBENCH_STAGED_JUDGING")
    run_all(piped_spec, progress=False)
    piped_log = capsys.readouterr().err
    assert "judging each simulation as it ends" in piped_log and "judging each" not in staged_log

    staged, piped = _judgments(staged_spec.run_dir), _judgments(piped_spec.run_dir)
    assert staged and piped == staged
    s1 = json.loads((staged_spec.run_dir / "scores.json").read_text())["rows"]
    s2 = json.loads((piped_spec.run_dir / "scores.json").read_text())["rows"]
    assert s1 == s2
    # the same stage summaries, in the same order: simulation line, then the judging line
    for log in (staged_log, piped_log):
        sims = log.index("2 simulations: 2 run now")
        assert sims < log.index("judging done: ") < log.index("scores: ")
    done = [x for x in piped_log.splitlines() if "judging done:" in x][0]
    assert f"{len(piped)} calls made, 0 already done" in done or "calls made" in done

    # resumed: nothing left to do, nothing changes
    run_all(piped_spec, progress=False)
    again = capsys.readouterr().err
    assert "0 calls made" in [x for x in again.splitlines() if "judging done:" in x][0]
    assert _judgments(piped_spec.run_dir) == staged
