"""Released AgentLeak data reported, not bent (issue 33, item 5): every value the loader changes
(clamps, rounds, defaults, drops) and every unknown enum value, dangling canary and allowed field
missing from the vault is a warning with its line and field, counted by `localbench data check`."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from localbench.benchmarks.agentleak.check import check_source
from localbench.benchmarks.agentleak.issues import ISSUE_CODES


@pytest.fixture(scope="module")
def record(shared_datasets: Path) -> dict:
    with (shared_datasets / "agentleak" / "scenarios_full_1000.jsonl").open() as fh:
        return json.loads(fh.readline())


def _edit(record: dict, how) -> dict:
    r = copy.deepcopy(record)
    how(r)
    return r


def _set(path: list, value):
    def how(r):
        obj = r
        for k in path[:-1]:
            obj = obj[k]
        if value is KeyError:
            del obj[path[-1]]
        else:
            obj[path[-1]] = value
    return how


CASES = {
    "weight_clamped": (_set(["evaluation", "field_weights", "ssn"], 42), "evaluation.field_weights.ssn"),
    "weight_rounded": (_set(["private_vault", "records", 0, "sensitivity_weight"], 3.5),
                       "private_vault.records[0].sensitivity_weight"),
    "defaulted": (_set(["private_vault", "records", 1, "sensitivity_weight"], KeyError),
                  "private_vault.records[1].sensitivity_weight"),
    "unknown_enum": (_set(["difficulty"], "extreme"), "difficulty"),
    "dangling_canary": (_set(["evaluation", "canaries"], ["CANARY_SSN_NOWHERE1"]), "evaluation.canaries[0]"),
    "allowed_absent": (_set(["allowed_set", "fields"], ["name", "shoe_size"]), "allowed_set.fields[1]"),
    "dropped": (lambda r: r["tools"].append(copy.deepcopy(r["tools"][0])), f"tools[{{n}}].tool_name"),
}


@pytest.mark.parametrize("code", list(CASES))
def test_each_kind_of_change_is_a_warning_with_line_and_field(tmp_path, record, code):
    how, field = CASES[code]
    bad = _edit(record, how)
    bad["scenario_id"] += "_edited"
    field = field.format(n=len(bad["tools"]) - 1)
    src = tmp_path / "r.jsonl"
    src.write_text(json.dumps(record) + "\n" + json.dumps(bad) + "\n")
    rep = check_source(str(src))
    got = [i for i in rep.issues if i.code == code]
    before = [i for i in got if i.line == 1]
    after = [i for i in got if i.line == 2]
    assert code in ISSUE_CODES
    assert len(after) == len(before) + 1, [(i.line, i.field, i.message) for i in got]
    assert field in {i.field for i in after} - {i.field for i in before} or \
        sum(i.field == field for i in after) > sum(i.field == field for i in before)


def test_data_check_counts_them_for_the_released_file(shared_datasets):
    from typer.testing import CliRunner

    from localbench.cli import app

    src = shared_datasets / "agentleak" / "scenarios_base_100.jsonl"
    r = CliRunner().invoke(app, ["data", "check", str(src), "--benchmark", "agentleak"], env={"COLUMNS": "250"})
    assert r.exit_code == 0, r.output
    assert "allowed_absent" in r.output or "allowed field" in r.output, r.output
