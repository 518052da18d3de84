"""The Slurm integration tests use only the cluster scripts/slurm-up.sh started on this host
(issue 35, item 7): on an HPC login node with its own cluster, `make test` submits nothing.
Checked with stand-in `scontrol` and `sinfo` on PATH that describe a cluster; no Slurm needed."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from test_slurm_cluster import own_cluster_problem

HOST = socket.gethostname().split(".")[0]
ROOT = Path(__file__).resolve().parent.parent


def fake_slurm(tmp_path: Path, monkeypatch, cluster: str, controller: str, nodes: str) -> None:
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    (bin_ / "scontrol").write_text(f"#!/bin/sh\nprintf 'ClusterName             = {cluster}\\n"
                                   f"SlurmctldHost[0]        = {controller}\\n'\n")
    (bin_ / "sinfo").write_text(f"#!/bin/sh\necho '{nodes}'\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_}:/usr/bin:/bin")


def marker(tmp_path: Path, host: str = HOST) -> Path:
    m = tmp_path / "localbench-slurm-up"
    m.write_text(f"cluster=ci\nhost={host}\nstarted_by=scripts/slurm-up.sh\n")
    return m


def test_a_foreign_cluster_without_the_marker_is_not_used(tmp_path, monkeypatch):
    fake_slurm(tmp_path, monkeypatch, "ci", HOST, HOST)
    problem = own_cluster_problem(tmp_path / "absent")
    assert problem is not None and "slurm-up.sh has not started" in problem


@pytest.mark.parametrize("cluster,controller,nodes,says", [
    ("hpc", "login01", "node[001-128]", "'hpc', not the local test cluster"),
    ("ci", "login01", HOST, "controller is 'login01'"),
    ("ci", HOST, f"{HOST} gpu07", "nodes are"),
])
def test_a_cluster_other_than_the_marked_one_is_not_used(tmp_path, monkeypatch, cluster, controller, nodes, says):
    fake_slurm(tmp_path, monkeypatch, cluster, controller, nodes)
    problem = own_cluster_problem(marker(tmp_path))
    assert problem is not None and says in problem, problem


def test_a_marker_from_another_host_is_not_trusted(tmp_path, monkeypatch):
    fake_slurm(tmp_path, monkeypatch, "ci", HOST, HOST)
    problem = own_cluster_problem(marker(tmp_path, host="elsewhere"))
    assert problem is not None and "names host 'elsewhere'" in problem


def test_the_cluster_slurm_up_started_is_used(tmp_path, monkeypatch):
    fake_slurm(tmp_path, monkeypatch, "ci", f"{HOST}(127.0.0.1)", HOST)
    assert own_cluster_problem(marker(tmp_path)) is None


def test_slurm_up_writes_the_marker_and_slurm_down_removes_it():
    up = (ROOT / "scripts" / "slurm-up.sh").read_text()
    down = (ROOT / "scripts" / "slurm-down.sh").read_text()
    assert "ClusterName=ci" in up and "cluster=ci\\nhost=%s" in up and '"$NODE" >"$MARKER"' in up
    assert "localbench-slurm-up" in down and "rm -f" in down
    # the marker is written only once the node is idle: after the readiness check, not before
    assert up.index('>"$MARKER"') > up.index("node never became idle")
    assert subprocess.run(["bash", "-n", str(ROOT / "scripts" / "slurm-up.sh")]).returncode == 0
