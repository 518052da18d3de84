"""A benchmark's own name for --levels (its condition axis's flag, SopriBench's --attackers): an
ordinary option of `run` and `simulate`, named by the benchmark's design."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml
from typer.testing import CliRunner

from localbench.cli import app
from localbench.commands.spec_flags import condition_flags, spec_from_flags
from localbench.errors import UserError


def test_attackers_is_sopri_levels_and_picks_the_benchmark(tmp_path):
    assert condition_flags() == {"attackers": "sopri"}
    spec = spec_from_flags(None, conditions={"attackers": "text,single"}, embedded=True)
    assert (spec.benchmark, spec.levels) == ("sopri", ["text", "single"])
    spec = spec_from_flags(None, benchmark="sopri", conditions={"attackers": "text"})
    assert (spec.benchmark, spec.levels) == ("sopri", ["text"])
    # a spec file names its benchmark: the flag does not add one
    f = tmp_path / "s.yaml"
    f.write_text(yaml.safe_dump({"benchmark": "sopri"}))
    assert spec_from_flags(f, conditions={"attackers": "text"}).levels == ["text"]


def test_other_commands_do_not_take_it_and_levels_is_left_alone():
    r = CliRunner().invoke(app, ["view", "--attackers", "x"])
    assert r.exit_code == 2 and "No such option: --attackers" in r.output
    assert spec_from_flags(None, levels="L0").levels == ["L0"]
    help_ = CliRunner().invoke(app, ["simulate", "--help"], terminal_width=200).output
    assert "--attackers" in help_ and "--levels" in help_


def test_the_flag_of_another_benchmark_is_refused_by_name():
    with pytest.raises(UserError, match="--attackers is benchmark 'sopri''s name for --levels; benchmark 'asb'"):
        spec_from_flags(None, benchmark="asb", conditions={"attackers": "text"})
    r = CliRunner().invoke(app, ["run", "--benchmark", "asb", "--attackers", "text"])
    assert isinstance(r.exception, UserError) and "benchmark 'asb' takes --levels" in str(r.exception)


def test_the_command_line_reads_it():
    """Through the real entry point: an unknown attacker is refused naming the levels field."""
    out = subprocess.run([sys.executable, "-m", "localbench.cli", "simulate", "--attackers", "nosuch",
                          "--out", "/nonexistent-dir-for-test"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert "unknown attacker 'nosuch'" in out.stderr and "levels" in out.stderr
