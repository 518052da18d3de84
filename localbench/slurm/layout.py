"""Where a Slurm run keeps its files, and the record of what was submitted.

    RUN/                     the merged run: what a single-machine run of the spec would write
    RUN/shards/<i>/          shard i's own run directory (transcripts, judgments, cache)
    RUN/slurm/spec.yaml      the spec as submitted (shard fields cleared)
    RUN/slurm/specs/         one spec per shard (out = RUN/shards, run_id = i, shard = i)
    RUN/slurm/presets/       model presets rewritten for tensor parallelism, when used
    RUN/slurm/*.sbatch       the scripts handed to sbatch
    RUN/slurm/state/         one file per shard task, written as it exits (status without sacct)
    RUN/slurm/logs/          job output (default log_dir)
    RUN/slurm/submission.json  job ids of every submission, newest last
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from pydantic import BaseModel, Field

from localbench.errors import UserError
from localbench.files import write_atomic
from localbench.runlog import RunFiles, RunPaths


class JobSubmission(BaseModel):
    """One sbatch round: an array over some shards and the dependent merge job (or, when every
    shard is complete and only the merge job failed, the merge job alone: no array)."""

    array_job: str | None = None
    merge_job: str | None = None
    shards: list[int]
    submitted: str = Field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    array_script: str | None = None
    merge_script: str | None = None


class SubmissionRecord(BaseModel):
    """RUN/slurm/submission.json: everything status, cancel, resubmit and merge need."""

    run_dir: str
    num_shards: int
    job_name: str
    log_dir: str
    workdir: str
    options: dict = Field(default_factory=dict)
    submissions: list[JobSubmission] = Field(default_factory=list)

    def array_job_of(self, shard: int) -> str | None:
        """The array job that last ran this shard."""
        for sub in reversed(self.submissions):
            if shard in sub.shards:
                return sub.array_job
        return None

    @property
    def latest(self) -> JobSubmission | None:
        return self.submissions[-1] if self.submissions else None

    def job_ids(self) -> list[str]:
        """Every array and merge job ever submitted for the run."""
        return sorted({j for s in self.submissions for j in (s.array_job, s.merge_job) if j})


class RunLayout:
    """Paths of one Slurm run, relative to its (absolute) run directory."""

    def __init__(self, run_dir: str | Path):
        self.run = Path(os.path.abspath(run_dir))

    @property
    def slurm(self) -> Path:
        return RunPaths(self.run).slurm_dir

    @property
    def spec_file(self) -> Path:
        return self.slurm / RunFiles.SPEC

    @property
    def submission_file(self) -> Path:
        return self.slurm / "submission.json"

    @property
    def shards(self) -> Path:
        return RunPaths(self.run).shards_dir

    def shard_dir(self, i: int) -> Path:
        return RunPaths(self.run).shard(i)

    def shard_spec(self, i: int) -> Path:
        return self.slurm / "specs" / f"shard-{i}.yaml"

    @property
    def presets(self) -> Path:
        return self.slurm / "presets"

    @property
    def state(self) -> Path:
        return self.slurm / "state"

    def state_file(self, i: int) -> Path:
        return self.state / f"shard-{i}.exit"

    @property
    def merge_state_file(self) -> Path:
        return self.state / "merge.exit"

    @property
    def default_log_dir(self) -> Path:
        return self.slurm / "logs"

    def script(self, kind: str, round_: int) -> Path:
        """array.sbatch / merge.sbatch for the first submission, array-2.sbatch... for resubmits."""
        return self.slurm / (f"{kind}.sbatch" if round_ <= 1 else f"{kind}-{round_}.sbatch")

    def read_record(self) -> SubmissionRecord:
        f = self.submission_file
        if not f.exists():
            raise UserError(f"{self.run}: no Slurm submission here (missing {f}); submit with `localbench slurm submit SPEC`")
        try:
            return SubmissionRecord.model_validate_json(f.read_text())
        except ValueError as e:
            raise UserError(f"{f}: unreadable submission record: {e}") from e

    def write_record(self, rec: SubmissionRecord) -> None:
        write_atomic(self.submission_file, json.dumps(rec.model_dump(), indent=2) + "\n")
