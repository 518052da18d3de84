"""scripts/slurm-up.sh waits for the dpkg lock instead of failing when another apt or dpkg holds
it (issue 18, item 6). Needs root and the local cluster's packages: the script is rerun on the
running cluster (it is idempotent), with one extra package name so that it reaches its apt step,
and `apt-get` replaced by a stand-in that records whether the lock was free when it ran."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

from test_slurm_cluster import own_cluster_problem

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "slurm-up.sh"
LOCK = Path("/var/lib/dpkg/lock-frontend")


def test_slurm_up_waits_for_the_dpkg_lock(tmp_path):
    if os.geteuid() != 0 or shutil.which("sinfo") is None or not LOCK.exists() or shutil.which("lslocks") is None:
        pytest.skip("needs root, Debian's dpkg and the local Slurm cluster's packages")
    foreign = own_cluster_problem()
    if foreign is not None:  # the script rewrites slurm.conf: never on a cluster it did not start
        pytest.skip(f"not the local test cluster ({foreign})")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "apt-get").write_text(f"""#!/bin/sh
if lslocks -n -o PATH | grep -q '^{LOCK}$'; then echo locked; else echo free; fi >> {tmp_path}/apt-get.log
echo "$@" >> {tmp_path}/apt-get.log
""")
    (fake / "apt-get").chmod(0o755)
    held = open(LOCK, "w")
    fcntl.lockf(held, fcntl.LOCK_EX)  # what a running apt or dpkg holds
    release = threading.Timer(5.0, lambda: (fcntl.lockf(held, fcntl.LOCK_UN), held.close()))
    release.start()
    t0 = time.monotonic()
    try:
        r = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, timeout=240,
                           env={**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "SLURM_UP_LOG_DIR": str(tmp_path),
                                "OMP_NUM_THREADS": "1",
                                "SLURM_UP_PKGS": "slurmctld slurmd slurm-client munge lb-no-such-package"})
    finally:
        release.join()
    assert r.returncode == 0, r.stdout + r.stderr
    assert "waiting for the dpkg lock" in r.stdout and "dpkg lock free after" in r.stdout, r.stdout
    log = (tmp_path / "apt-get.log").read_text().splitlines()
    assert log[0] == "free" and "DPkg::Lock::Timeout=600" in log[1] and "lb-no-such-package" in log[1], log
    assert time.monotonic() - t0 >= 4.5
    assert "idle" in subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True).stdout
    # the node has every CPU, though the script ran with OMP_NUM_THREADS=1 (as a test worker does)
    cpus = subprocess.run(["sinfo", "-h", "-o", "%c"], capture_output=True, text=True).stdout.split()
    assert cpus == [str(len(os.sched_getaffinity(0)))], cpus
