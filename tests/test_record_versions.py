"""A run directory in today's record format, committed, must read to the same scores and report
whatever the records become (a format change comes with an upgrade of the records it replaces).

tests/golden/agentleak-v2-run/ is `localbench run --benchmark agentleak --agent oracle-leaks-C2
--judge none --limit 1` as record version 2 wrote it: no model and no judge, so every number in it
is the rule tiers' on a scripted agent, and any change to what the score stage reads from it shows.
(tests/golden/asb-v1-run/ does the same for version 1, in tests/test_records.py.)
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml
from typer.testing import CliRunner

from localbench.cli import app
from localbench.runlog import RECORD_VERSION, ScenarioScore, Transcript, read_records, write_records
from localbench.scores import SCORES_VERSION

RECORDED = Path(__file__).resolve().parent / "golden" / "agentleak-v2-run"


def _report_body(path: Path) -> list[str]:
    """report.md without its footer (where it was rendered, and when)."""
    return [line for line in path.read_text().splitlines() if not line.startswith("Run directory `")]


def _score_and_report(run: Path) -> tuple[dict, list[str]]:
    for command in ("score", "report"):
        r = CliRunner().invoke(app, [command, str(run)])
        assert r.exit_code == 0, (r.output, r.exception)
    return json.loads((run / "scores.json").read_text()), _report_body(run / "report.md")


def _rewritten_in_todays_format(run: Path) -> None:
    """The same run as this localbench writes it: every record at RECORD_VERSION, the spec's
    ``conditions`` under today's name."""
    for name, kind in (("transcripts.jsonl", Transcript), ("scenario_scores.jsonl", ScenarioScore)):
        write_records(run / name, read_records(run / name, kind))
    doc = yaml.safe_load((run / "spec.yaml").read_text())
    doc["spec"]["conditions"] = doc["spec"].pop("levels")
    (run / "spec.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


def test_a_version_2_run_scores_and_reports_as_it_did(tmp_path):
    assert {t.version for t in read_records(RECORDED / "transcripts.jsonl", Transcript)} == {2}
    old, new = tmp_path / "v2" / RECORDED.name, tmp_path / "v3" / RECORDED.name
    shutil.copytree(RECORDED, old)
    shutil.copytree(RECORDED, new)
    _rewritten_in_todays_format(new)
    assert {t.version for t in read_records(new / "transcripts.jsonl", Transcript)} == {RECORD_VERSION} != {2}
    scores, report = _score_and_report(old)
    assert (scores, report) == _score_and_report(new)  # read through the upgrade = written today

    # every number as version 2 recorded it: its rows' `level` is today's `condition`
    recorded = json.loads((RECORDED / "scores.json").read_text())
    assert (recorded["version"], scores["version"]) == (1, SCORES_VERSION)
    recorded["version"] = SCORES_VERSION
    recorded["rows"] = [{("condition" if k == "level" else k): v for k, v in r.items()} for r in recorded["rows"]]
    assert scores == recorded
    # the report as recorded, but for the words that named the condition axis after one benchmark
    renamed = {"at level ": "at setting ", "| levels |": "| settings |", "scenario and level`": "scenario and setting`"}
    was = _report_body(RECORDED / "report.md")
    for a, b in renamed.items():
        assert any(a in line for line in was), a
        was = [line.replace(a, b) for line in was]
    # but for "How far to trust these numbers" (issue 45 item 3), added since right after the headline
    # table: this run has no model judge (its rule judge computed every number), so no trust section
    start = report.index("## How far to trust these numbers")
    assert "no model judge labelled this run" in report[start + 2] and report[start + 3] == ""
    assert report[:start] + report[start + 4:] == was
    assert "trust" not in scores
    clr = {(row["metric"], row["condition"]): row["mean"] for row in scores["rows"]
           if row["metric"].startswith("CLR:") and row["category"] == "ALL"}
    assert clr[("CLR:C2", "multi")] > 0 and {v for (m, _), v in clr.items() if m != "CLR:C2"} == {0.0}  # the planted leak


def test_a_version_1_scores_file_reads_and_reports_without_rescoring(tmp_path):
    """A run scored before the rename is reported from its own scores.json (rows with ``level``),
    to the same report as after rescoring it."""
    from localbench.scores import Scores

    old = Scores.read(RECORDED / "scores.json")
    raw = json.loads((RECORDED / "scores.json").read_text())
    assert [r.condition for r in old.rows] == [r["level"] for r in raw["rows"]] and old.rows
    run = tmp_path / RECORDED.name
    shutil.copytree(RECORDED, run)
    r = CliRunner().invoke(app, ["report", str(run)])
    assert r.exit_code == 0, (r.output, r.exception)
    assert json.loads((run / "scores.json").read_text()) == raw  # reporting rewrote nothing
    reported = _report_body(run / "report.md")
    assert reported == _score_and_report(run)[1]
