"""Every validation error names the field that is wrong (#33): the error paths that named another
thing (a file called 'categories', no field at all) now name the spec field, one line each."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from localbench.scenario_files import ScenarioError, parse_names
from localbench.spec import SpecError, load_spec


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "localbench.cli", *args], capture_output=True, text=True,
                          timeout=300, env={**os.environ, "HF_HUB_OFFLINE": "1"})


@pytest.mark.parametrize("args,says", [
    (["--conditions", "L9"], "error: field 'conditions': unknown privacy level 'L9'"),
    (["--categories", "ZZ"], "error: field 'categories': unknown category 'ZZ'"),
    (["--benchmark", "agentleak", "--categories", "zz"], "error: field 'categories': unknown vertical 'zz'"),
])
def test_an_unknown_level_or_category_names_the_field(tmp_path, args, says):
    r = _cli("simulate", *args, "--agent", "tiny-random", "--out", str(tmp_path), "--no-progress")
    lines = [x for x in r.stderr.splitlines() if x.startswith("error:")]
    assert r.returncode == 2 and len(lines) == 1 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert lines[0].startswith(says), lines[0]


def test_a_category_parsed_from_a_flag_is_a_field_not_a_file():
    with pytest.raises(ScenarioError) as e:
        parse_names("CD,nope", {"cd": "CD"}, "category", "CD")
    assert e.value.field == "categories" and e.value.file == ""
    assert str(e.value) == "field 'categories': unknown category 'nope' (expected one of CD)"


def test_a_shard_out_of_range_names_the_field():
    spec = load_spec(None, shard=3, num_shards=2)
    with pytest.raises(SpecError, match=r"^field 'shard': 3 is out of range for num_shards=2 \(shards are 0 to 1\)"):
        spec.select_shard(["a", "b", "c"])
