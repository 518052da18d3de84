"""Slurm's client commands (sbatch, sacct, scontrol, scancel), run where they are installed: the
one place status, usage and submit reach the scheduler through."""

from __future__ import annotations

import shutil
import subprocess


def run_command(cmd: list[str]) -> subprocess.CompletedProcess[str] | None:
    """Run a Slurm client command; None when it is not installed here."""
    if shutil.which(cmd[0]) is None:
        return None
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)
