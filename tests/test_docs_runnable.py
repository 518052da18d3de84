"""Every code block of the user guide marked `<!-- runnable -->` runs as written (issue 35, item 5),
so the commands the documentation shows cannot drift from the program. Each line is one
command; `.venv/bin/localbench` is this environment's `localbench`; the commands run in a fresh
folder that has the repository's scenarios/ and examples/ beside them, on the tiny model."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
USER_GUIDE = [p for p in sorted((ROOT / "docs").rglob("*.md")) if "dev" not in p.relative_to(ROOT / "docs").parts]
BLOCK = re.compile(r"^<!-- runnable -->\n```(?:bash|sh)\n(.*?)^```", re.MULTILINE | re.DOTALL)
LOCALBENCH = str(Path(sys.prefix) / "bin" / "localbench")


def runnable_blocks() -> list[tuple[str, str]]:
    return [(f"{p.relative_to(ROOT)}#{i}", m.group(1)) for p in [ROOT / "README.md", *USER_GUIDE]
            for i, m in enumerate(BLOCK.finditer(p.read_text()))]


def commands(block: str) -> list[list[str]]:
    out = []
    for line in block.splitlines():
        argv = shlex.split(line, comments=True)
        if argv:
            out.append([LOCALBENCH if a == ".venv/bin/localbench" else a for a in argv])
    return out


def test_the_user_guide_has_runnable_blocks_and_they_run_localbench():
    blocks = runnable_blocks()
    assert blocks, "no block is marked <!-- runnable -->"
    for where, block in blocks:
        cmds = commands(block)
        assert cmds and all(c[0] == LOCALBENCH for c in cmds), f"{where}: only localbench commands are run here"


@pytest.mark.timeout(600)
@pytest.mark.parametrize("where,block", runnable_blocks(), ids=[w for w, _ in runnable_blocks()])
def test_a_runnable_block_runs_as_written(where, block, tmp_path, tiny_dir):
    for name in ("scenarios", "examples"):
        (tmp_path / name).symlink_to(ROOT / name)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(
        x for x in [str(ROOT), os.environ.get("PYTHONPATH", "")] if x)}
    for argv in commands(block):
        r = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=500, env=env)
        assert r.returncode == 0, f"{where}: `{shlex.join(argv)}` exited {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
