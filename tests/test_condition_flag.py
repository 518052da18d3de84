"""A benchmark's own name for --levels (its condition axis's flag, SopriBench's --attackers)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from localbench.commands.spec_flags import expand_condition_flags
from localbench.errors import UserError


def test_attackers_is_sopri_levels_and_picks_the_benchmark():
    assert expand_condition_flags(["run", "--attackers", "text,single"]) == [
        "run", "--benchmark", "sopri", "--levels", "text,single"]
    assert expand_condition_flags(["simulate", "--benchmark", "sopri", "--attackers=text"]) == [
        "simulate", "--benchmark", "sopri", "--levels=text"]
    # a spec file names its benchmark: the flag does not add one
    assert expand_condition_flags(["run", "--spec", "s.yaml", "--attackers", "text"]) == [
        "run", "--spec", "s.yaml", "--levels", "text"]


def test_other_commands_and_flags_are_left_alone():
    assert expand_condition_flags(["view", "--attackers", "x"]) == ["view", "--attackers", "x"]
    assert expand_condition_flags(["run", "--levels", "L0"]) == ["run", "--levels", "L0"]
    assert expand_condition_flags([]) == []


def test_the_flag_of_another_benchmark_is_refused_by_name():
    with pytest.raises(UserError, match="--attackers is benchmark 'sopri''s name for --levels; benchmark 'asb'"):
        expand_condition_flags(["run", "--benchmark", "asb", "--attackers", "text"])


def test_the_command_line_reads_it():
    """Through the real entry point: an unknown attacker is refused naming the levels field."""
    out = subprocess.run([sys.executable, "-m", "localbench.cli", "simulate", "--attackers", "nosuch",
                          "--out", "/nonexistent-dir-for-test"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stderr
    assert "unknown attacker 'nosuch'" in out.stderr and "levels" in out.stderr
