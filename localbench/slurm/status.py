"""Where each shard of a Slurm run stands, and why a failed one failed.

Sources: `scontrol show job` (live, works without accounting, but forgets a job MinJobAge after
it ends), `sacct` (needs slurmdbd; remembers every job), then the state file each task writes as it
exits, and the shard's own record files, which outlive the scheduler's memory.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from pydantic import BaseModel

from localbench.errors import UserError
from localbench.runlog import RunPaths
from localbench.slurm.client import run_command
from localbench.slurm.layout import RunLayout, SubmissionRecord

ACTIVE = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED",
          "REQUEUE_HOLD", "REQUEUE_FED", "SIGNALING", "STAGE_OUT", "STOPPED", "RESV_DEL_HOLD"}
FAILED = {"FAILED", "CANCELLED", "TIMEOUT", "OUT_OF_MEMORY", "NODE_FAIL", "PREEMPTED", "BOOT_FAIL",
          "DEADLINE", "SPECIAL_EXIT"}


class SlurmError(UserError, RuntimeError):
    """A Slurm command that is missing or failed; the message has its stderr."""


class JobInfo(BaseModel):
    """One job or array task as the scheduler reports it."""

    job_id: str  # "123" or "123_4"
    state: str
    exit_code: str | None = None  # "3:0" = exit status 3, no signal
    reason: str | None = None
    restarts: int | None = None
    source: str  # sacct | scontrol | state-file
    gave_up: str | None = None  # state file: "max_requeues" when the task stopped requeueing itself
    requeues: int | None = None  # state file: self-requeues at the time-limit warning


class ShardStatus(BaseModel):
    shard: int
    job_id: str | None = None
    state: str = "UNKNOWN"
    exit_code: str | None = None
    reason: str | None = None
    restarts: int | None = None
    source: str | None = None
    transcripts: int = 0
    judgments: int = 0
    log: str | None = None
    why: str | None = None

    @property
    def failed(self) -> bool:
        return self.state in FAILED

    @property
    def active(self) -> bool:
        return self.state in ACTIVE


class RunStatus(BaseModel):
    run_dir: str
    num_shards: int
    shards: list[ShardStatus]
    merge: JobInfo | None = None
    merge_job: str | None = None
    merge_why: str | None = None
    merge_needed: bool = False  # every shard is complete but the merge job did not succeed
    accounting: bool = False
    usage: dict | None = None  # GPU-hours (localbench.slurm.usage.summarize)

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.shards:
            out[s.state] = out.get(s.state, 0) + 1
        return out

    def text(self) -> str:
        lines = [f"run {self.run_dir}: {self.num_shards} shard(s): "
                 + ", ".join(f"{n} {s}" for s, n in sorted(self.counts().items()))]
        for s in self.shards:
            bits = [f"shard {s.shard}", f"job {s.job_id or '-'}", s.state]
            if s.exit_code and s.exit_code != "0:0":
                bits.append(f"exit {s.exit_code}")
            if s.reason and s.reason not in ("None", "(null)") and s.state != "COMPLETED":
                bits.append(s.reason)
            if s.restarts:
                bits.append(f"restarts {s.restarts}")
            bits.append(f"{s.transcripts} transcripts" + (f", {s.judgments} judgments" if s.judgments else ""))
            lines.append("  " + " | ".join(bits))
            if s.why:
                lines.append(f"    why: {s.why}")
            if s.log and (s.failed or s.state == "UNKNOWN"):
                lines.append(f"    log: {s.log}")
        if self.merge_job:
            m = self.merge
            lines.append(f"  merge | job {self.merge_job} | {m.state if m else 'UNKNOWN'}"
                         + (f" | exit {m.exit_code}" if m and m.exit_code and m.exit_code != "0:0" else "")
                         + (f" | {m.reason}" if m and m.reason and m.reason not in ("None", "(null)") else "")
                         + (f" | from {m.source}" if m and m.source == "state-file" else ""))
            if self.merge_why:
                lines.append(f"    why: {self.merge_why}")
        if self.usage:
            from localbench.slurm.usage import line

            lines.append(f"  {line(self.usage)}")
        return "\n".join(lines)


def expand_indices(spec: str) -> list[int]:
    """'0-3,7%2' -> [0, 1, 2, 3, 7] (Slurm's compressed array index list)."""
    spec = spec.strip("[]").split("%", 1)[0]
    out: list[int] = []
    for part in filter(None, spec.split(",")):
        if "-" in part:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def _norm_state(s: str) -> str:
    return s.split()[0].rstrip("+") if s else "UNKNOWN"  # "CANCELLED by 0" -> CANCELLED


def parse_sacct(stdout: str) -> dict[str, JobInfo]:
    """`sacct -X -P -n -o JobID,State,ExitCode,Reason` lines, pending array ranges expanded."""
    out: dict[str, JobInfo] = {}
    for line in stdout.splitlines():
        parts = line.split("|")
        if len(parts) < 4:
            continue
        jid, state, code, reason = parts[:4]
        m = re.match(r"^(\d+)_\[(.+)\]$", jid)  # pending array tasks, compressed
        ids = [f"{m.group(1)}_{i}" for i in expand_indices(m.group(2))] if m else [jid]
        for j in ids:
            out[j] = JobInfo(job_id=j, state=_norm_state(state), exit_code=code, reason=reason, source="sacct")
    return out


def query_sacct(job_ids: list[str]) -> dict[str, JobInfo] | None:
    """Jobs by id from sacct, or None when accounting is off (sacct exits non-zero)."""
    r = run_command(["sacct", "-X", "-P", "-n", "-j", ",".join(job_ids), "-o", "JobID,State,ExitCode,Reason"])
    if r is None or r.returncode != 0:
        return None
    return parse_sacct(r.stdout)


def _field(line: str, name: str) -> str | None:
    m = re.search(rf"(?:^| ){name}=(\S*)", line)
    return m.group(1) if m else None


def parse_scontrol(stdout: str) -> dict[str, JobInfo]:
    """`scontrol show job -o` lines (one per job or array task; pending tasks compressed)."""
    out: dict[str, JobInfo] = {}
    for line in stdout.splitlines():
        if not line.strip():
            continue
        info = dict(state=_norm_state(_field(line, "JobState") or ""), exit_code=_field(line, "ExitCode"),
                    reason=_field(line, "Reason"), restarts=int(_field(line, "Restarts") or 0),
                    source="scontrol")
        array_job, task = _field(line, "ArrayJobId"), _field(line, "ArrayTaskId")
        if array_job and task:
            for i in expand_indices(task):
                out[f"{array_job}_{i}"] = JobInfo(job_id=f"{array_job}_{i}", **info)
        else:
            j = _field(line, "JobId") or "?"
            out[j] = JobInfo(job_id=j, **info)
    return out


def query_scontrol(job_ids: list[str]) -> dict[str, JobInfo]:
    """Jobs by id from `scontrol show job` (what the controller still remembers)."""
    out: dict[str, JobInfo] = {}
    for jid in job_ids:
        r = run_command(["scontrol", "show", "job", "-o", jid])
        if r is None:
            raise SlurmError("scontrol not found: run this on a Slurm login node")
        if r.returncode == 0:  # otherwise "Invalid job id": forgotten after MinJobAge
            out.update(parse_scontrol(r.stdout))
    return out


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, "rb") as f:
        return sum(1 for line in f if line.strip())


def last_error_line(log: Path, max_bytes: int = 65536) -> str | None:
    """The most telling line at the end of a job log: an error message, else the last line."""
    if not log.exists():
        return None
    with open(log, "rb") as f:
        f.seek(max(0, log.stat().st_size - max_bytes))
        lines = [x.strip() for x in f.read().decode("utf-8", "replace").splitlines() if x.strip()]
    if not lines:
        return None
    for pattern in (r"^error:|Error:|Exception:|CANCELLED|DUE TO|Killed|OOM", r"failed|Traceback"):
        for line in reversed(lines):
            if re.search(pattern, line):
                return line[:400]
    return lines[-1][:400]


def _read_state(f: Path, job_id: str) -> JobInfo | None:
    """A state file written by a task as it exited (``job_id``: the id it names the task by)."""
    if not f.exists():
        return None
    try:
        d = json.loads(f.read_text())
    except ValueError:
        return None
    code = int(d.get("exit_code", 1))
    gave_up = d.get("gave_up") or None
    state = "COMPLETED" if code == 0 else ("CANCELLED" if d.get("signal") and not gave_up else "FAILED")
    return JobInfo(job_id=job_id, state=state, exit_code=f"{code}:0",
                   reason=f"signal {d['signal']}" if d.get("signal") else None,
                   restarts=d.get("restarts"), source="state-file", gave_up=gave_up, requeues=d.get("requeues"))


def _state_file(layout: RunLayout, shard: int) -> JobInfo | None:
    f = layout.state_file(shard)
    try:
        d = json.loads(f.read_text()) if f.exists() else None
    except ValueError:
        d = None
    if d is None:
        return None
    return _read_state(f, d.get("job") or f"{d.get('array_job_id') or d.get('job_id')}_{shard}")


def _merge_state_file(layout: RunLayout) -> JobInfo | None:
    f = layout.merge_state_file
    try:
        d = json.loads(f.read_text()) if f.exists() else None
    except ValueError:
        d = None
    return None if d is None else _read_state(f, str(d.get("job") or d.get("job_id")))


def _gave_up(info: JobInfo, field: str) -> str:
    return (f"stopped at the time limit after {info.requeues or 0} self-requeue(s) (slurm.max_requeues): "
            f"raise slurm.{field} and resubmit")


def log_dir(rec: SubmissionRecord) -> Path:
    """Where the jobs wrote their output. Records store it absolute; an older record's relative
    log_dir is in the workdir, where the jobs ran, not in the directory status is run from."""
    return Path(rec.workdir) / rec.log_dir


def log_path(rec: SubmissionRecord, array_job: str, shard: int) -> Path:
    return log_dir(rec) / f"{rec.job_name}-{array_job}_{shard}.out"


def run_status(run_dir: str | Path) -> RunStatus:
    """Status of every shard of the latest submissions, and of the merge job."""
    layout = RunLayout(run_dir)
    rec = layout.read_record()
    ids = rec.job_ids()
    # The controller's view is live; sacct remembers what the controller has forgotten (it can lag
    # a few seconds behind, and keeps stale reasons), so scontrol wins where both know a job.
    acct = query_sacct(ids)
    accounting = acct is not None
    jobs = {**(acct or {}), **query_scontrol(ids)}
    shards = []
    for i in range(rec.num_shards):
        array_job = rec.array_job_of(i)
        shard = RunPaths(layout.shard_dir(i))
        st = ShardStatus(shard=i, transcripts=_count_lines(shard.transcripts_path),
                         judgments=_count_lines(shard.judgments_path))
        if array_job:
            st.job_id = f"{array_job}_{i}"
            info = jobs.get(st.job_id)
            sf = _state_file(layout, i)
            sf = sf if sf is not None and sf.job_id == st.job_id else None
            if info is None and sf is not None:
                info = sf
            if info is not None:
                st.state, st.exit_code, st.reason = info.state, info.exit_code, info.reason
                st.restarts, st.source = info.restarts, info.source
            log = log_path(rec, array_job, i)
            st.log = str(log)
            if st.failed and sf is not None and sf.gave_up:
                st.why = _gave_up(sf, "time")
            elif st.failed:
                line = last_error_line(log)
                st.why = f"{st.state}" + (f" (exit {st.exit_code})" if st.exit_code else "") + (
                    f", {st.reason}" if st.reason and st.reason not in ("None", "(null)") else "") + (
                    f"; log: {line}" if line else f"; no log at {log}")
        shards.append(st)
    from localbench.slurm.usage import summarize

    status = RunStatus(run_dir=str(layout.run), num_shards=rec.num_shards, shards=shards, accounting=accounting,
                       usage=summarize(layout.run, with_sacct=accounting))
    merge_job = next((s.merge_job for s in reversed(rec.submissions) if s.merge_job), None)
    if merge_job:
        status.merge_job = merge_job
        status.merge = jobs.get(merge_job)
        sf = _merge_state_file(layout)
        sf = sf if sf is not None and sf.job_id == merge_job else None
        if status.merge is None and sf is not None:  # forgotten by the scheduler: how the job itself ended
            status.merge = sf
        m = status.merge
        all_done = all(s.state == "COMPLETED" for s in shards)
        ended_badly = m is None or m.state in FAILED or m.state == "UNKNOWN"
        status.merge_needed = all_done and ended_badly
        if m is not None and m.state in FAILED or (m is None and all_done):
            bad = [s.shard for s in shards if s.failed]
            line = last_error_line(log_dir(rec) / f"{rec.job_name}-merge-{merge_job}.out")
            if m is not None and m.reason and "Dependency" in m.reason and bad:
                status.merge_why = (f"never ran: shard(s) {bad} did not succeed; fix and run "
                                    f"`localbench slurm resubmit {layout.run} --failed`")
            elif sf is not None and sf.gave_up:
                status.merge_why = _gave_up(sf, "merge_job.time")
            else:
                status.merge_why = (m.state if m else "UNKNOWN (the scheduler has forgotten it and it left no "
                                    "state file)") + (f"; log: {line}" if line else "")
            if status.merge_needed:
                status.merge_why += (f"; every shard is complete: `localbench slurm resubmit {layout.run} --failed` "
                                     "submits the merge job alone")
    return status


def cancel_run(run_dir: str | Path) -> tuple[list[str], list[str]]:
    """scancel the jobs of the run that are still queued or running.

    Returns (cancelled, ended): the job ids cancelled now, and those that had already ended (or
    that the scheduler no longer knows), which are left alone and never reported as cancelled.
    """
    layout = RunLayout(run_dir)
    rec = layout.read_record()
    ids = rec.job_ids()
    if not ids:
        return [], []
    jobs = query_scontrol(ids)
    active = [j for j in ids if any(info.state in ACTIVE for key, info in jobs.items()
                                    if key == j or key.startswith(f"{j}_"))]
    ended = [j for j in ids if j not in active]
    if not active:
        return [], ended
    r = run_command(["scancel", *active])
    if r is None:
        raise SlurmError("scancel not found: run this on a Slurm login node")
    if r.returncode != 0 and "Invalid job id" not in r.stderr:
        raise SlurmError(f"scancel {' '.join(active)}: {r.stderr.strip()}")
    return active, ended
