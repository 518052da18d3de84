"""What the cluster says of a submitted study: per run (its shard array and merge job) queued,
running, failed or done, and each judge server job's state; read through the jobs recorded by
`study submit` (RUN/slurm/submission.json, <out>/slurm/study-submission.json) with
``slurm.status`` (scontrol, sacct where kept, then the state files the jobs write)."""

from __future__ import annotations

from pathlib import Path

from localbench.slurm.judge_url import server_state_file
from localbench.slurm.status import ACTIVE, FAILED, JobInfo, RunStatus, _read_state, query_sacct, query_scontrol, run_status
from localbench.slurm.study import ServerRecord, StudyRecord

NOT_SUBMITTED = "not submitted"


def cell_state(st: RunStatus) -> str:
    """queued | running | failed | done for one submitted run, with what is running or failed."""
    m = st.merge
    if m is not None and m.state == "COMPLETED":
        return "done"
    failed = [s.shard for s in st.shards if s.failed]
    if failed:
        return f"failed (shard(s) {', '.join(map(str, failed))})"
    if m is not None and m.state in FAILED or st.merge_needed:
        return f"failed (merge job {st.merge_job}: {m.state if m else 'lost'})"
    if m is not None and m.state == "RUNNING":
        return "running (merge, judge, score, report)"
    running = sum(s.state == "RUNNING" for s in st.shards)
    if running:
        return f"running ({running} of {st.num_shards} shard(s))"
    if any(s.active for s in st.shards) or (m is not None and m.state in ACTIVE):
        done = sum(s.state == "COMPLETED" for s in st.shards)
        return "queued" + (f" ({done} of {st.num_shards} shard(s) done, merge waiting)" if done else "")
    return "unknown (the scheduler has forgotten the jobs and they left no state file)"


def run_cluster_state(run_dir: str | Path) -> str:
    from localbench.slurm.layout import RunLayout

    if not RunLayout(run_dir).submission_file.exists():
        return NOT_SUBMITTED
    return cell_state(run_status(run_dir))


def server_state(server: ServerRecord) -> JobInfo | None:
    """The judge server job as the scheduler (or, once forgotten, its state file) reports it."""
    jobs = {**(query_sacct([server.job]) or {}), **query_scontrol([server.job])}
    if server.job in jobs:
        return jobs[server.job]
    return _read_state(server_state_file(server.url_file), server.job)


def server_lines(rec: StudyRecord, folder: Path) -> list[str]:
    lines = []
    for s in rec.servers:
        info = server_state(s)
        state = info.state if info else "UNKNOWN"
        # the judge-stop job cancels it once its merges have ended: that is how it is meant to end
        if state == "CANCELLED":
            state = "stopped (cancelled by its judge-stop job or scancel)"
        url = Path(s.url_file)
        where = f", serving at {url.read_text().strip()}" if url.exists() else ""
        lines.append(f"  judge server {s.preset}: job {s.job}, {state}{where}; judge-stop job {s.stop_job or '-'}")
    return lines
