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

from typer.testing import CliRunner

from localbench.cli import app
from localbench.runlog import Transcript, read_records

RECORDED = Path(__file__).resolve().parent / "golden" / "agentleak-v2-run"


def _report_body(path: Path) -> list[str]:
    """report.md without its footer (where it was rendered, and when)."""
    return [line for line in path.read_text().splitlines() if not line.startswith("Run directory `")]


def test_a_version_2_run_scores_and_reports_as_it_did(tmp_path):
    assert {t.version for t in read_records(RECORDED / "transcripts.jsonl", Transcript)} == {2}
    run = tmp_path / RECORDED.name
    shutil.copytree(RECORDED, run)
    for command in ("score", "report"):
        r = CliRunner().invoke(app, [command, str(run)])
        assert r.exit_code == 0, (r.output, r.exception)
    assert json.loads((run / "scores.json").read_text()) == json.loads((RECORDED / "scores.json").read_text())
    assert _report_body(run / "report.md") == _report_body(RECORDED / "report.md")
    clr = {(row["metric"], row["level"]): row["mean"] for row in json.loads((run / "scores.json").read_text())["rows"]
           if row["metric"].startswith("CLR:") and row["category"] == "ALL"}
    assert clr[("CLR:C2", "multi")] > 0 and {v for (m, _), v in clr.items() if m != "CLR:C2"} == {0.0}  # the planted leak
