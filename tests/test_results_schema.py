"""The results schema: the shipped JSON Schema files equal what the code generates, installed as package
data, validate what a run writes, and a run's provenance names localbench's commit."""

from __future__ import annotations

import fnmatch
import json
import tomllib
from pathlib import Path

import pytest

from localbench.results_schema import SCHEMA_DIR, dumps, generate
from localbench.runlog.provenance import UNKNOWN, localbench_commit, package_versions
from localbench.scores import JudgeWarning, ScoreRow, Scores

ROOT = Path(__file__).resolve().parent.parent


def test_shipped_schema_files_are_what_the_code_generates():
    generated = generate()
    assert set(generated) == {p.name for p in SCHEMA_DIR.glob("*.json")}
    for name, schema in generated.items():
        assert (SCHEMA_DIR / name).read_text() == dumps(schema), (
            f"localbench/schemas/{name} is stale: run `python -m localbench.results_schema`")


def test_schema_files_are_package_data():
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["localbench"]
    for p in SCHEMA_DIR.glob("*.json"):
        rel = p.relative_to(ROOT / "localbench").as_posix()
        assert any(fnmatch.fnmatch(rel, g) for g in data), rel


def test_the_schema_accepts_what_a_run_writes_and_refuses_a_misspelt_field(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = generate()["scores.schema.json"]
    scores = Scores(run_id="r", benchmark="agentleak", rows=[ScoreRow(
        metric="ELR", model="m", judge="j", condition="multi", category="ALL", mean=0.5, ci_low=0.2, ci_high=0.8, n=4)],
        judge_warnings=[JudgeWarning(judge="leak", judge_model="j", pattern="constant", message="x", count=1, total=1)])
    scores.write(tmp_path / "scores.json")
    doc = json.loads((tmp_path / "scores.json").read_text())
    jsonschema.validate(doc, schema)
    doc["rows"][0]["levle"] = "x"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(doc, schema)
    described = schema["$defs"]["ScoreRow"]["properties"]
    assert "agent preset" in described["model"]["description"]  # the field's comment in scores.py


def test_provenance_names_localbench_commit(tmp_path):
    commit = localbench_commit()
    if (ROOT / ".git").exists():
        assert len(commit.split("+")[0]) == 40 and int(commit.split("+")[0], 16) >= 0, commit
    assert package_versions()["localbench_commit"] == commit
    pkg = tmp_path / "localbench"
    pkg.mkdir()
    assert localbench_commit.__wrapped__(pkg) == UNKNOWN  # an installed copy, no checkout around it
