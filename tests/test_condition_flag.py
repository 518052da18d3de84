"""A benchmark's own name for --conditions (its condition axis's flag, SopriBench's --attackers): an
ordinary option of `run` and `simulate`, named by the benchmark's design; --levels, the option's
earlier name, and `levels`, the spec field's, still read."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from typer.testing import CliRunner

from localbench.cli import app
from localbench.commands.spec_flags import condition_flags, spec_from_flags
from localbench.errors import UserError


def test_attackers_is_sopri_conditions_and_picks_the_benchmark(tmp_path):
    assert condition_flags() == {"attackers": "sopri"}
    spec = spec_from_flags(None, named_conditions={"attackers": "text,single"}, embedded=True)
    assert (spec.benchmark, spec.conditions) == ("sopri", ["text", "single"])
    spec = spec_from_flags(None, benchmark="sopri", named_conditions={"attackers": "text"})
    assert (spec.benchmark, spec.conditions) == ("sopri", ["text"])
    # a spec file names its benchmark: the flag does not add one
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"benchmark": "sopri"}))
    assert spec_from_flags(f, named_conditions={"attackers": "text"}).conditions == ["text"]


def test_other_commands_do_not_take_it_and_conditions_is_left_alone():
    r = CliRunner().invoke(app, ["view", "--attackers", "x"])
    assert r.exit_code == 2 and "No such option: --attackers" in r.output
    assert spec_from_flags(None, conditions="L0").conditions == ["L0"]
    help_ = CliRunner().invoke(app, ["simulate", "--help"], terminal_width=200).output
    assert "--attackers" in help_ and "--conditions" in help_ and "--levels" in help_


def test_levels_is_read_as_conditions_on_the_command_line_and_in_a_spec(tmp_path):
    """The earlier names: --levels on the command line, ``levels`` in a spec file (and in every
    spec.yaml a run recorded before the rename), both mean ``conditions``, and hash as they did."""
    from localbench.spec import load_spec

    f = tmp_path / "old.yaml"
    f.write_text("levels: [L0]\n")
    old = load_spec(f)
    assert old.conditions == ["L0"] and old.content_hash() == load_spec(None, conditions=["L0"]).content_hash()
    assert old.content_hash() == "4888bb20cc"  # the id asb-<hash> a run with levels [L0] always had
    f.write_text("levels: [L0]\nconditions: [L2]\n")
    with pytest.raises(Exception, match="earlier name of 'conditions'"):
        load_spec(f)
    r = CliRunner().invoke(app, ["simulate", "--levels", "L9", "--out", str(tmp_path)])
    assert isinstance(r.exception, UserError) and "L9" in str(r.exception)


def test_the_flag_of_another_benchmark_is_refused_by_name():
    with pytest.raises(UserError, match="--attackers is benchmark 'sopri''s name for --conditions; benchmark 'asb'"):
        spec_from_flags(None, benchmark="asb", named_conditions={"attackers": "text"})
    r = CliRunner().invoke(app, ["run", "--benchmark", "asb", "--attackers", "text"])
    assert isinstance(r.exception, UserError) and "benchmark 'asb' takes --conditions" in str(r.exception)


def test_the_command_line_reads_it():
    """Through the real entry point: an unknown attacker is refused naming the conditions field."""
    out = subprocess.run([sys.executable, "-m", "localbench.cli", "simulate", "--attackers", "nosuch",
                          "--out", "/nonexistent-dir-for-test"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert "unknown attacker 'nosuch'" in out.stderr and "conditions" in out.stderr
