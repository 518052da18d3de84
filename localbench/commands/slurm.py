"""`localbench slurm ...`: run a spec as a Slurm job array and follow it (see docs/hpc.md)."""

from __future__ import annotations

import json
import socket
import sys
import time
import urllib.request
from pathlib import Path
from typing import Optional

import typer

slurm_app = typer.Typer(help="Run a spec as a Slurm job array: submit, status, cancel, resubmit, merge, prefetch.",
                        no_args_is_help=True)


@slurm_app.command("submit")
def submit_cmd(
    spec_file: Path = typer.Argument(..., help="run spec YAML; its `slurm:` section holds the sbatch options"),
    dry_run: bool = typer.Option(False, "--dry-run", help="print the scripts and sbatch commands; submit nothing"),
    num_shards: Optional[int] = typer.Option(None, "--num-shards", min=1, help="override slurm.num_shards"),
    workdir: Optional[Path] = typer.Option(None, "--workdir", help="where tasks run (default: here)"),
    no_fit_check: bool = typer.Option(False, "--no-fit-check",
                                      help="submit even if a model does not fit the GPUs slurm.gres names"),
) -> None:
    """Submit a job array over the spec's shards and a dependent job that merges and scores them."""
    from localbench.commands.models import fit_problems
    from localbench.errors import UserError
    from localbench.slurm.plan import make_plan
    from localbench.slurm.render import render_array, render_merge
    from localbench.slurm.submit import submit
    from localbench.spec import load_spec

    spec = load_spec(spec_file)
    plan = make_plan(spec, str(spec_file), workdir=workdir, num_shards=num_shards)
    problems = [] if no_fit_check else fit_problems(plan, spec_file)
    if problems:
        raise UserError(f"{spec_file}: field 'slurm.gres': {problems[0]} (see `localbench models --check-fit --spec "
                        f"{spec_file}`; --no-fit-check submits anyway)")
    if dry_run:
        lay = plan.layout
        for job in (render_array(plan), render_merge(plan)):
            typer.echo(f"# ---- {lay.script(job.name, 1)}")
            typer.echo(job.script)
        typer.echo(f"# sbatch --parsable {lay.script('array', 1)}")
        typer.echo(f"# sbatch --parsable --dependency=afterok:<array job id> {lay.script('merge', 1)}")
        typer.echo(f"# (dry run: nothing written; the shard specs would go to {lay.shard_spec(0).parent})")
        return
    sub = submit(plan)
    typer.echo(f"submitted run {plan.layout.run}")
    typer.echo(f"  array job {sub.array_job}: {plan.num_shards} shard(s), logs in {plan.log_dir}")
    typer.echo(f"  merge job {sub.merge_job} (after the array succeeds)")
    typer.echo(f"follow it: localbench slurm status {plan.layout.run}")


@slurm_app.command("status")
def status_cmd(
    run_dir: Path = typer.Argument(..., help="the run directory (printed by submit)"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
) -> None:
    """Each shard's job state, exit code and record counts; for a failed shard, why."""
    from localbench.slurm.status import run_status

    st = run_status(run_dir)
    if as_json:
        d = st.model_dump()
        for s, shard in zip(d["shards"], st.shards):
            s["failed"], s["active"] = shard.failed, shard.active
        typer.echo(json.dumps(d, indent=2))
    else:
        typer.echo(st.text())


@slurm_app.command("cancel")
def cancel_cmd(run_dir: Path = typer.Argument(..., help="the run directory")) -> None:
    """Cancel every job of the run (shards and merge). Finished records stay; resubmit resumes."""
    from localbench.slurm.status import cancel_run

    cancelled, ended = cancel_run(run_dir)
    if cancelled:
        typer.echo(f"cancelled jobs {', '.join(cancelled)}")
    if ended:
        typer.echo(f"{'also ' if cancelled else 'nothing to cancel: '}job(s) {', '.join(ended)} had already ended "
                   "(or the scheduler no longer knows them); left as they are")
    if not cancelled and not ended:
        typer.echo("no jobs recorded for this run")


@slurm_app.command("resubmit")
def resubmit_cmd(
    run_dir: Path = typer.Argument(..., help="the run directory"),
    failed: bool = typer.Option(True, "--failed/--all",
                                help="only shards that failed or were cancelled (default), or every shard not running"),
) -> None:
    """Submit failed shards again (they resume from their files) with a new merge job."""
    from localbench.slurm.submit import resubmit

    sub = resubmit(run_dir, only_failed=failed)
    if sub is None:
        typer.echo("nothing to resubmit: no shard failed and the merge job did not fail")
        return
    if sub.array_job is None:
        typer.echo(f"resubmitted the merge job alone (every shard is complete): merge job {sub.merge_job}")
        return
    typer.echo(f"resubmitted shard(s) {sub.shards}: array job {sub.array_job}, merge job {sub.merge_job}")


@slurm_app.command("merge")
def merge_cmd(
    run_dir: Path = typer.Argument(..., help="the run directory"),
    allow_partial: bool = typer.Option(False, "--allow-partial", help="merge even if some shards never started"),
) -> None:
    """Merge RUN/shards/* into RUN (what the dependent job runs); safe to repeat."""
    from localbench.slurm.merge import merge_run

    rep = merge_run(run_dir, allow_partial=allow_partial)
    typer.echo(rep.summary())


@slurm_app.command("prefetch")
def prefetch_cmd(spec_file: Path = typer.Argument(..., help="run spec YAML")) -> None:
    """Download or build every model the spec uses, and the Hub dataset its `hf:` scenarios name,
    where the (offline) tasks will look for them."""
    from localbench.slurm.prefetch import cache_env, prefetch, prefetch_scenarios
    from localbench.spec import load_spec

    spec = load_spec(spec_file)
    for k, v in cache_env(spec).items():
        typer.echo(f"{k}={v}")
    for f in prefetch(spec):
        typer.echo(f"{f.role}: {f.preset} -> {f.location}")
    scenarios = prefetch_scenarios(spec)
    if scenarios is not None:
        typer.echo(f"scenarios: {scenarios.source} -> {scenarios.scenarios} scenarios")


@slurm_app.command("free-port", hidden=True)
def free_port_cmd() -> None:
    """Print a TCP port free on this host (for a task's model server)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        typer.echo(str(s.getsockname()[1]))


@slurm_app.command("wait-url", hidden=True)
def wait_url_cmd(
    url: str = typer.Argument(...),
    pid: Optional[int] = typer.Option(None, "--pid", help="give up if this process exits"),
    timeout: float = typer.Option(900.0, "--timeout"),
) -> None:
    """Wait until URL answers 200 (a task's model server is up); exit 1 on timeout or if PID dies."""
    import os

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if pid is not None:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                typer.echo(f"error: the server (pid {pid}) exited before {url} answered", err=True)
                raise typer.Exit(1)
        time.sleep(1.0)
    typer.echo(f"error: {url} did not answer within {timeout:.0f} s", err=True)
    raise typer.Exit(1)


@slurm_app.command("wait-judge", hidden=True)
def wait_judge_cmd(
    url_file: Path = typer.Argument(..., help="the file a study's judge server job writes its URL to"),
    timeout: float = typer.Option(14400.0, "--timeout"),
) -> None:
    """Wait until a study's judge server has written its URL and answers; print the URL (a merge job's step)."""
    from localbench.slurm.judge_url import wait_for_judge

    typer.echo(wait_for_judge(url_file, timeout))


@slurm_app.command("usage")
def usage_cmd(
    run_dir: Path = typer.Argument(..., help="the run directory"),
    as_json: bool = typer.Option(False, "--json", help="machine-readable output"),
    record: bool = typer.Option(False, "--record", help="also write it into RUN/spec.yaml (slurm.usage)"),
) -> None:
    """GPU-hours of the run's tasks, requeues included, from their own timers (and sacct if kept)."""
    from localbench.errors import UserError
    from localbench.slurm.layout import RunLayout
    from localbench.slurm.usage import line, record_usage, summarize

    u = record_usage(run_dir) if record else summarize(run_dir)
    if u is None:
        raise UserError(f"{run_dir}: no Slurm submission here (missing {RunLayout(run_dir).submission_file})")
    typer.echo(json.dumps(u, indent=2) if as_json else line(u))


def _node_ip() -> str:
    """This node's address for Ray: LB_NODE_IP if set, else what the host name resolves to."""
    import os

    ip = os.environ.get("LB_NODE_IP")
    if ip:
        return ip
    try:
        return socket.gethostbyname(socket.gethostname())
    except OSError:
        return "127.0.0.1"


@slurm_app.command("node-ip", hidden=True)
def node_ip_cmd() -> None:
    """Print this node's IP address (the Ray head's, in a multi-node task)."""
    typer.echo(_node_ip())


@slurm_app.command("ray-node", hidden=True)
def ray_node_cmd(
    head: bool = typer.Option(False, "--head", help="start the head (on the task's first node)"),
    port: int = typer.Option(6379, "--port", help="the head's port"),
    address: Optional[str] = typer.Option(None, "--address", help="a worker joins the head at IP:PORT"),
    num_gpus: int = typer.Option(0, "--num-gpus", help="GPUs this node gives the cluster"),
    num_cpus: Optional[int] = typer.Option(None, "--num-cpus", help="CPUs this node gives the cluster"),
) -> None:
    """Run one Ray node of a multi-node task in the foreground (`ray start --block`), with
    VLLM_HOST_IP set to this node's address and every Ray port but the head's chosen free here
    (localbench.slurm.ray); SIGTERM stops it."""
    import os
    import shutil

    ip = _node_ip()
    # the `ray` of this Python's environment first (a venv that is used but not activated)
    beside = Path(sys.executable).parent / "ray"
    ray = str(beside) if beside.exists() else shutil.which("ray")
    if ray is None:
        typer.echo("error: `ray` is not installed in this environment (pip install 'ray[default]'); a multi-node "
                   "task serves its model with vLLM on a Ray cluster", err=True)
        raise typer.Exit(1)
    if not head and not address:
        raise typer.BadParameter("give --head or --address IP:PORT")
    os.environ["VLLM_HOST_IP"] = ip
    from localbench.slurm.ray import ray_start_command

    cmd = ray_start_command(ray, ip=ip, num_gpus=num_gpus, head=head, port=port, address=address, num_cpus=num_cpus)
    typer.echo(f"[localbench] {'head' if head else 'worker'} {socket.gethostname()} ({ip}): {' '.join(cmd)}", err=True)
    os.execv(ray, cmd)


@slurm_app.command("wait-ray", hidden=True)
def wait_ray_cmd(
    address: str = typer.Argument(..., help="the head's IP:PORT"),
    nodes: int = typer.Option(..., "--nodes", help="wait until this many nodes are alive"),
    gpus: int = typer.Option(0, "--gpus", help="... and they give this many GPUs"),
    timeout: float = typer.Option(600.0, "--timeout"),
) -> None:
    """Wait until the Ray cluster at ADDRESS has NODES live nodes (and GPUS GPUs); exit 1 on timeout."""
    import os
    import subprocess

    probe = ("import json, ray; ray.init(address=%r, logging_level='ERROR', log_to_driver=False); "
             "ns = [n for n in ray.nodes() if n.get('Alive')]; "
             "print(json.dumps([len(ns), sum(n.get('Resources', {}).get('GPU', 0) for n in ns)])); ray.shutdown()"
             % address)
    deadline = time.monotonic() + timeout
    seen = (0, 0)
    while time.monotonic() < deadline:
        r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                           env={**os.environ, "RAY_ADDRESS": address})
        if r.returncode == 0 and r.stdout.strip():
            alive, have = json.loads(r.stdout.strip().splitlines()[-1])
            seen = (alive, have)
            if alive >= nodes and have >= gpus:
                typer.echo(f"Ray cluster at {address}: {alive} nodes, {have:g} GPUs", err=True)
                return
        elif "No module named 'ray'" in r.stderr:
            typer.echo("error: `ray` is not installed in this environment (pip install 'ray[default]')", err=True)
            raise typer.Exit(1)
        time.sleep(5.0)
    typer.echo(f"error: the Ray cluster at {address} has {seen[0]} of {nodes} nodes and {seen[1]:g} of {gpus} GPUs "
               f"after {timeout:.0f} s; see the ray-*.log files beside the task's server log", err=True)
    raise typer.Exit(1)


@slurm_app.command("exec", hidden=True,
                   context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def exec_cmd(ctx: typer.Context) -> None:
    """Run a command with SIGINT restored to its default (a task's model server).

    A non-interactive shell starts background commands with SIGINT ignored, and Python keeps an
    ignored SIGINT ignored; restored, `localbench serve` gets Ctrl-C semantics and stops its engine.
    """
    import os
    import signal

    if not ctx.args:
        raise typer.BadParameter("a command to run is required")
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    os.execvp(ctx.args[0], ctx.args)


def register(app: typer.Typer) -> None:
    app.add_typer(slurm_app, name="slurm")
