"""Submit a RunPlan: write its files, `sbatch --parsable` the array, then the afterok merge job.

Resubmitting a run's failed shards re-renders the array over just those shards and a new merge
job that waits for them (and for any of the old shards still running); each shard resumes from
its own run directory.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from localbench.files import write_atomic
from localbench.slurm.layout import JobSubmission, RunLayout, SubmissionRecord
from localbench.slurm.plan import RunPlan, make_plan
from localbench.slurm.render import RenderedJob, render_array, render_merge
from localbench.slurm.client import run_command
from localbench.slurm.status import SlurmError, run_status
from localbench.spec import load_spec


def sbatch(script: Path, args: list[str], workdir: Path, script_args: list[str] | None = None) -> str:
    """Submit one script (``script_args``: its own arguments); the job id (without a cluster suffix)."""
    try:
        r = subprocess.run(["sbatch", "--parsable", *args, str(script), *(script_args or [])], capture_output=True,
                           text=True, cwd=workdir, timeout=120)
    except FileNotFoundError as e:
        raise SlurmError("sbatch not found: submit from a Slurm login node (or start one: scripts/slurm-up.sh)") from e
    if r.returncode != 0:
        raise SlurmError(f"sbatch {script}: {r.stderr.strip() or r.stdout.strip()}")
    return r.stdout.strip().split(";")[0]


def write_plan_files(plan: RunPlan) -> None:
    """The submitted spec, the shard specs and any derived presets, under RUN/slurm/."""
    lay = plan.layout
    write_atomic(lay.spec_file, yaml.safe_dump(plan.spec.model_dump(mode="json"), sort_keys=False, allow_unicode=True))
    for i, d in plan.shard_specs.items():
        write_atomic(lay.shard_spec(i), yaml.safe_dump(d, sort_keys=False, allow_unicode=True))
    for path, data in plan.presets.items():
        write_atomic(path, yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    Path(plan.log_dir).mkdir(parents=True, exist_ok=True)
    lay.state.mkdir(parents=True, exist_ok=True)
    lay.shards.mkdir(parents=True, exist_ok=True)


def _submit_pair(plan: RunPlan, array: RenderedJob, merge: RenderedJob, shards: list[int], round_: int,
                 extra_deps: list[str]) -> JobSubmission:
    lay = plan.layout
    a_path, m_path = lay.script("array", round_), lay.script("merge", round_)
    write_atomic(a_path, array.script, mode=0o755)
    write_atomic(m_path, merge.script, mode=0o755)
    array_job = sbatch(a_path, [], plan.workdir)
    deps = ":".join([array_job, *extra_deps])
    try:
        merge_job = sbatch(m_path, [f"--dependency=afterok:{deps}"], plan.workdir)
    except SlurmError:
        run_command(["scancel", array_job])  # no array without the job that merges it
        raise
    return JobSubmission(array_job=array_job, merge_job=merge_job, shards=shards, array_script=str(a_path),
                         merge_script=str(m_path))


def _new_record(plan: RunPlan) -> SubmissionRecord:
    return SubmissionRecord(run_dir=str(plan.layout.run), num_shards=plan.num_shards, job_name=plan.job_name,
                            log_dir=plan.log_dir, workdir=str(plan.workdir),
                            options=plan.options.model_dump(mode="json"))


def submit(plan: RunPlan) -> JobSubmission:
    """Submit the whole run. Refuses while an earlier submission of the same run is still active."""
    lay = plan.layout
    rec = _new_record(plan)
    if lay.submission_file.exists():
        old = lay.read_record()
        st = run_status(lay.run)
        busy = [s.job_id for s in st.shards if s.active]
        if busy or (st.merge and st.merge.state in ("PENDING", "RUNNING")):
            raise SlurmError(
                f"{lay.run}: already submitted and still active (jobs {busy or [st.merge_job]}); "
                f"see `localbench slurm status {lay.run}`, or `localbench slurm cancel {lay.run}` first"
            )
        if old.num_shards != plan.num_shards:
            raise SlurmError(
                f"{lay.run}: submitted before with {old.num_shards} shards, now {plan.num_shards}; shard files "
                "would not line up. Use the same num_shards, or a new run_id/out"
            )
        rec.submissions = old.submissions
    write_plan_files(plan)
    sub = _submit_pair(plan, render_array(plan), render_merge(plan), list(range(plan.num_shards)),
                       len(rec.submissions) + 1, [])
    rec.submissions.append(sub)
    lay.write_record(rec)
    return sub


def plan_for_run(run_dir: str | Path) -> tuple[RunPlan, SubmissionRecord]:
    """The plan of a submitted run, rebuilt from RUN/slurm/spec.yaml and the submission record."""
    lay = RunLayout(run_dir)
    rec = lay.read_record()
    spec = load_spec(lay.spec_file)
    plan = make_plan(spec, str(lay.spec_file), workdir=rec.workdir, num_shards=rec.num_shards)
    if plan.layout.run != lay.run:  # the run directory was moved: follow it
        plan = make_plan(spec.model_copy(update={"out": str(lay.run.parent), "run_id": lay.run.name}),
                         str(lay.spec_file), workdir=rec.workdir, num_shards=rec.num_shards)
    return plan, rec


def _resubmit_merge(plan: RunPlan, rec: SubmissionRecord) -> JobSubmission:
    """Every shard is complete but the merge job failed, was cancelled or lost: submit it alone
    (no dependency; the merge is safe to repeat)."""
    write_plan_files(plan)
    round_ = len(rec.submissions) + 1
    path = plan.layout.script("merge", round_)
    write_atomic(path, render_merge(plan).script, mode=0o755)
    sub = JobSubmission(merge_job=sbatch(path, [], plan.workdir), shards=[], merge_script=str(path))
    rec.submissions.append(sub)
    plan.layout.write_record(rec)
    return sub


def resubmit(run_dir: str | Path, only_failed: bool = True) -> JobSubmission | None:
    """Submit again the shards that failed or were lost (or, with only_failed=False, every shard not
    running). When every shard is complete but the merge job is not (it failed, was cancelled, or
    is lost), the merge job alone is submitted again.

    Returns None when there is nothing to resubmit.
    """
    plan, rec = plan_for_run(run_dir)
    st = run_status(plan.layout.run)
    active = [s for s in st.shards if s.active]
    if only_failed:
        # UNKNOWN: neither the scheduler nor the task's state file knows how it ended (killed hard,
        # forgotten after MinJobAge): it did not finish, so it runs again.
        todo = [s.shard for s in st.shards if s.failed or s.state == "UNKNOWN"]
    else:
        todo = [s.shard for s in st.shards if not s.active]
    if not todo:
        if only_failed and st.merge_needed:
            return _resubmit_merge(plan, rec)
        return None
    if st.merge and st.merge.state in ("PENDING",) and st.merge_job:
        run_command(["scancel", st.merge_job])  # it waits on the failed shards; the new merge job replaces it
    extra = [s.job_id for s in active if s.job_id]
    write_plan_files(plan)
    round_ = len(rec.submissions) + 1
    sub = _submit_pair(plan, render_array(plan, todo), render_merge(plan), todo, round_, extra)
    rec.submissions.append(sub)
    plan.layout.write_record(rec)
    return sub
