"""The `ray start` command of one node of a multi-node task, on ports no other job holds.

Ray's defaults are fixed ports (6379 for the head, 8265 for the dashboard, 10001 for clients, a
worker range of 10002-19999, ...): two jobs sharing a node, or a node where another user runs Ray,
clash on them. Every port here is one the operating system says is free on this node, and the
worker range is a window of free ports; the head's own port comes from the script (it is part of
the address the workers are given).
"""

from __future__ import annotations

import socket

WORKER_PORTS = 64  # ports for Ray's worker processes: a few per GPU is plenty for vLLM


def free_ports(n: int, host: str = "") -> list[int]:
    """``n`` distinct ports that are free now (bound together, so none repeats)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def free_range(width: int, lo: int = 20000, hi: int = 60000, host: str = "") -> tuple[int, int]:
    """A window of ``width`` consecutive ports that are all free now (first fit from a random start)."""
    import random

    start = random.randrange(lo, hi - width)
    for base in list(range(start, hi - width, width)) + list(range(lo, start, width)):
        if all(_free(p, host) for p in range(base, base + width)):
            return base, base + width - 1
    raise OSError(f"no {width} consecutive free ports between {lo} and {hi}")


def _free(port: int, host: str = "") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


def ray_start_command(ray: str, *, ip: str, num_gpus: int, head: bool, port: int | None = None,
                      address: str | None = None, num_cpus: int | None = None) -> list[str]:
    """`ray start --block` for a head (``port``) or a worker (``address``), every other port free."""
    cmd = [ray, "start", "--block", "--disable-usage-stats", f"--node-ip-address={ip}", f"--num-gpus={num_gpus}"]
    if num_cpus:
        cmd.append(f"--num-cpus={num_cpus}")
    names = ["node-manager-port", "object-manager-port", "dashboard-agent-listen-port", "dashboard-agent-grpc-port",
             "metrics-export-port", "runtime-env-agent-port"]
    if head:
        names += ["ray-client-server-port"]
    ports = free_ports(len(names))
    cmd += [f"--{n}={p}" for n, p in zip(names, ports)]
    lo, hi = free_range(WORKER_PORTS)
    cmd += [f"--min-worker-port={lo}", f"--max-worker-port={hi}"]
    if head:
        cmd += ["--head", f"--port={port}", "--include-dashboard=false"]  # no dashboard: one port fewer to clash
    else:
        cmd += [f"--address={address}"]
    return cmd
