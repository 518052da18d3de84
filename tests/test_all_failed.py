"""A run in which every simulation failed exits non-zero with the count and the first error (#33):
nothing to judge or score must not look like success."""

from __future__ import annotations

import os
import subprocess
import sys

PLAY_RAISES = """
from localbench.benchmarks.asb.simulate import AsbSimulator
async def play(self, unit, clients, spec):
    raise ValueError(f"broken input for {unit.scenario}")
AsbSimulator.play = play
"""


def _cli(pre: str, *args: str) -> subprocess.CompletedProcess:
    code = f"import sys\n{pre}\nfrom localbench.cli import main\nsys.argv = ['localbench', *{list(args)!r}]\nmain()\n"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def test_every_simulation_failed_exits_1_with_the_count_and_the_first_error(tmp_path, tiny_dir):
    args = ["--agent", "tiny-random", "--engine", "hf", "--limit", "1", "--categories", "CD,MC", "--conditions", "L0",
            "--out", str(tmp_path), "--no-progress"]
    for command in ("simulate", "run"):
        r = _cli(PLAY_RAISES, command, *args)
        errors = [x for x in r.stderr.splitlines() if x.startswith("error:")]
        assert r.returncode == 1 and len(errors) == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
        assert "all 2 simulations failed, the first: ValueError: broken input for " in errors[0]
    assert not list(tmp_path.rglob("judgments.jsonl"))  # nothing judged


def test_one_good_simulation_is_enough_for_exit_0(tmp_path, tiny_dir):
    pre = PLAY_RAISES.replace("raise ValueError", "if unit.category == 'MC': return await _play(self, unit, clients, spec)\n    raise ValueError")
    pre = pre.replace("async def play", "_play = AsbSimulator.play\nasync def play")
    r = _cli(pre, "simulate", "--agent", "tiny-random", "--engine", "hf", "--limit", "1", "--categories", "CD,MC",
             "--conditions", "L0", "--max-rounds", "1", "--max-tokens", "16", "--out", str(tmp_path), "--no-progress")
    assert r.returncode == 0, r.stderr[-3000:]
    assert "1 with errors" in r.stdout
