"""Bounded inputs (#33): a run id and every text field of a scenario or user file have a length bound,
checked with one line that names the field; the bounds fit the real data and can be changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from localbench.errors import EXIT_BAD_INPUT
from localbench.scenario_files import MAX_TEXT_CHARS, ScenarioError, check_text_fields

REPO = Path(__file__).resolve().parent.parent
ASB_FILE = REPO / "scenarios" / "asb-mini" / "am" / "am-housewarming.yaml"
NAME = "am-housewarming.json"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localbench.cli", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1", **(env or {})})


def _error_line(r: subprocess.CompletedProcess) -> str:
    lines = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
    return lines[0]


def test_a_300_character_run_id_is_one_line_naming_the_field(tmp_path):
    r = _cli("simulate", "--run-id", "r" * 300, "--out", str(tmp_path), "--no-progress")
    assert r.returncode == EXIT_BAD_INPUT
    line = _error_line(r)
    assert "field 'run_id'" in line and "300 bytes long, over the bound of 200" in line
    assert list(tmp_path.iterdir()) == []  # nothing created


def _asb_dir_with(tmp_path: Path, field: str, value: str) -> Path:
    doc = yaml.safe_load(ASB_FILE.read_text())
    doc[field] = value
    d = tmp_path / "suite" / "am"
    d.mkdir(parents=True)
    (d / NAME).write_text(json.dumps(doc))  # JSON: a 10 MB field parses in milliseconds
    return tmp_path / "suite"


def test_a_10_mb_field_is_refused_at_once_naming_file_and_field(tmp_path):
    suite = _asb_dir_with(tmp_path, "task", "x" * 10_000_000)
    t0 = time.monotonic()
    r = _cli("data", "check", str(suite))
    line = r.stdout + r.stderr
    assert r.returncode != 0, line[-2000:]
    assert f"{NAME}: field 'task': 10,000,000 characters, over the bound of {MAX_TEXT_CHARS:,}" in line
    r = _cli("simulate", "--scenarios", str(suite), "--out", str(tmp_path / "runs"), "--agent", "tiny-random",
             "--no-progress")
    assert r.returncode == EXIT_BAD_INPUT and "field 'task'" in _error_line(r)
    assert time.monotonic() - t0 < 120  # not minutes of prompt building


def test_the_bound_is_configurable_and_the_real_data_fits_it(tmp_path, shared_datasets):
    suite = _asb_dir_with(tmp_path, "task", "y" * 500)
    r = _cli("data", "check", str(suite), env={"LOCALBENCH_MAX_TEXT_CHARS": "100"})
    assert r.returncode != 0 and "field 'task': 500 characters, over the bound of 100 (LOCALBENCH_MAX_TEXT_CHARS" \
        in r.stdout + r.stderr
    assert _cli("data", "check", str(suite)).returncode == 0
    longest = 0
    for p in (shared_datasets / "agentsocialbench").rglob("*.json"):
        doc = json.loads(p.read_text())
        check_text_fields(doc, str(p))  # every released scenario is inside the default bound
        longest = max(longest, max((len(s) for s in _strings(doc)), default=0))
    assert MAX_TEXT_CHARS >= 5 * longest  # room to spare


def _strings(x):
    if isinstance(x, str):
        yield x
    elif isinstance(x, dict):
        for v in x.values():
            yield from _strings(v)
    elif isinstance(x, list):
        for v in x:
            yield from _strings(v)


def test_each_field_is_named_with_its_path():
    with pytest.raises(ScenarioError, match=r"u\.yaml:3: field 'posts\[1\]\.caption': 20,001 characters"):
        check_text_fields({"posts": [{"caption": "ok"}, {"caption": "z" * 20_001}]}, "u.yaml", 3)
    with pytest.raises(ScenarioError, match=r"field 'scenario_id': 201 characters, over the bound of 200"):
        check_text_fields({"scenario_id": "s" * 201}, "f.json")


def test_a_file_over_the_size_bound_is_named(tmp_path):
    suite = _asb_dir_with(tmp_path, "task", "t" * 3_000)
    r = _cli("data", "check", str(suite), env={"LOCALBENCH_MAX_FILE_MB": "0.001"})
    assert r.returncode != 0 and "MB, over the bound of 0.001 MB" in r.stdout + r.stderr
