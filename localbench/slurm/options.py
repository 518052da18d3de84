"""SlurmOptions: the `slurm:` section of a spec, validated before anything is rendered.

Every value either goes on an #SBATCH line (then it must be plainly safe: no spaces, quotes,
``$`` or newlines) or into the script body (then it is shell-quoted when rendered). Values that
cannot be made safe are refused here with the field's name, so a bad spec never becomes a script.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from localbench.errors import UserError
from localbench.slurm.shell import no_newline, sbatch_value, shell_line

DEFAULT_AFTER_MERGE = ["localbench judge {run}", "localbench score {run}", "localbench report {run}"]
DEFAULT_SERVE_COMMAND = "localbench serve {model} --host 127.0.0.1 --port {port}"

_TIME = re.compile(r"^(\d+-)?\d+(:\d{1,2}){0,2}$")
_MEM = re.compile(r"^\d+[KMGT]?$")
_SIGNAL = re.compile(r"^(?:B:)?(?:SIG)?([A-Z0-9]+)(?:@(\d+))?$")
_LONG_OPT = re.compile(r"^--[A-Za-z][A-Za-z0-9-]*(=.+)?$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Options localbench sets itself; setting them again in extra_sbatch would fight the renderer.
_OWNED = {"--array", "--output", "--error", "--job-name", "--dependency", "--requeue", "--no-requeue",
          "--signal", "--open-mode", "--parsable"}


class SlurmOptionsError(UserError, ValueError):
    """A `slurm:` option that is invalid or cannot be placed in a script safely."""


def gpus_in_gres(gres: str | None) -> int:
    """GPUs per task in a gres string: ``gpu`` = 1, ``gpu:4`` = 4, ``gpu:a100:2`` = 2; none = 0."""
    if not gres:
        return 0
    for part in gres.split(","):
        bits = part.split(":")
        if bits[0] != "gpu":
            continue
        if len(bits) == 1 or not bits[-1].isdigit():
            return 1
        return int(bits[-1])
    return 0


def _sbatch_field(v: str | None, field: str) -> str | None:
    if v is not None:
        sbatch_value(v, field)
    return v


class JobResources(BaseModel):
    """What one job asks the scheduler for. None means: leave it to the cluster's default."""

    model_config = ConfigDict(extra="forbid")

    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    time: str | None = None  # minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM:SS
    cpus_per_task: int | None = Field(None, ge=1)
    mem: str | None = None  # per node, e.g. 32G
    gres: str | None = None  # e.g. gpu:1, gpu:a100:4
    constraint: str | None = None

    @field_validator("partition", "account", "qos", "constraint", "gres")
    @classmethod
    def _plain(cls, v: str | None, info) -> str | None:
        return _sbatch_field(v, info.field_name)

    @field_validator("time")
    @classmethod
    def _time(cls, v: str | None) -> str | None:
        if v is not None and not _TIME.match(v):
            raise ValueError(f"{v!r} is not a Slurm time (minutes, HH:MM:SS or D-HH:MM:SS)")
        return v

    @field_validator("mem")
    @classmethod
    def _mem(cls, v: str | None) -> str | None:
        if v is not None and not _MEM.match(v):
            raise ValueError(f"{v!r} is not a Slurm memory size (e.g. 16000, 32G)")
        return v

    @property
    def gpus(self) -> int:
        return gpus_in_gres(self.gres)


class SlurmOptions(JobResources):
    """Options for the shard array (resources above) and for how each task runs."""

    job_name: str | None = None  # default: lb-<run id>
    num_shards: int | None = Field(None, ge=1)  # default: the spec's num_shards, else 1
    array_concurrency: int | None = Field(None, ge=1)  # at most N shards running at once (%N)
    extra_sbatch: list[str] = Field(default_factory=list)  # more #SBATCH options: "--exclusive", "--mail-type=END"
    # environment set up before localbench runs
    modules: list[str] = Field(default_factory=list)  # `module load` each
    venv: str | None = None  # a virtualenv to activate ($VARS allowed)
    conda_env: str | None = None  # a conda environment to activate
    setup: list[str] = Field(default_factory=list)  # raw shell lines, run as written (your own code)
    env: dict[str, str] = Field(default_factory=dict)  # extra exports ($VARS allowed in values)
    workdir: str | None = None  # where tasks run; default: the directory you submit from
    log_dir: str | None = None  # default: <run dir>/slurm/logs
    scratch: str | None = None  # if set, HF_HOME, vLLM's cache and localbench's cache default under it
    hf_home: str | None = None
    vllm_cache: str | None = None
    localbench_cache: str | None = None
    offline: bool = True  # compute nodes do not download: run `localbench slurm prefetch` first
    # preemption and time limits
    signal: str | None = Field("USR1@120", validate_default=True)  # warn the task this many seconds before its time limit
    requeue: bool = True  # requeue on preemption/node failure, and when the warning signal arrives
    # engines and GPUs
    serve: bool = False  # run the agent model in a `localbench serve` on a free port, not in-process
    serve_command: str = DEFAULT_SERVE_COMMAND  # placeholders {model} {port}
    serve_timeout: int = Field(900, ge=1)  # seconds to wait for the server to answer
    judge_gpus: int | None = Field(None, ge=1)  # of each task's GPUs, this many serve the judge
    tensor_parallel: bool = True  # each model uses all the GPUs it is given, tensor-parallel
    # stages
    judge_per_shard: bool = False  # judge inside each shard task instead of after the merge
    after_merge: list[str] | None = None  # commands the dependent job runs after merging ({run})
    merge_job: JobResources = Field(default_factory=JobResources)  # overrides for the dependent job

    @field_validator("job_name")
    @classmethod
    def _job_name(cls, v: str | None) -> str | None:
        return _sbatch_field(v, "job_name")

    @field_validator("log_dir")
    @classmethod
    def _log_dir(cls, v: str | None) -> str | None:
        return _sbatch_field(v, "log_dir")

    @field_validator("extra_sbatch")
    @classmethod
    def _extra(cls, v: list[str]) -> list[str]:
        for i, line in enumerate(v):
            field = f"extra_sbatch[{i}]"
            line = line.strip()
            if line.startswith("#SBATCH"):
                line = line[len("#SBATCH"):].strip()
            if not _LONG_OPT.match(line):
                raise ValueError(f"{field}: {line!r} must be a long option: --name or --name=value")
            sbatch_value(line, field)
            if line.split("=", 1)[0] in _OWNED:
                raise ValueError(f"{field}: {line.split('=', 1)[0]} is set by localbench; use its own option")
            v[i] = line
        return v

    @field_validator("signal")
    @classmethod
    def _signal(cls, v: str | None) -> str | None:
        if v is None:
            return v
        m = _SIGNAL.match(v)
        if not m:
            raise ValueError(f"{v!r} is not SIG[@SECONDS], e.g. USR1@120")
        return f"B:{m.group(1)}" + (f"@{m.group(2)}" if m.group(2) else "")

    @field_validator("modules", "setup", "after_merge")
    @classmethod
    def _lines(cls, v: list[str] | None, info) -> list[str] | None:
        for i, line in enumerate(v or []):
            shell_line(line, f"{info.field_name}[{i}]")
        return v

    @field_validator("serve_command")
    @classmethod
    def _serve_command(cls, v: str) -> str:
        shell_line(v, "serve_command")
        if "{port}" not in v:
            raise ValueError("serve_command must contain {port}")
        return v

    @field_validator("venv", "conda_env", "workdir", "scratch", "hf_home", "vllm_cache", "localbench_cache")
    @classmethod
    def _path(cls, v: str | None, info) -> str | None:
        return None if v is None else no_newline(v, info.field_name)

    @field_validator("env")
    @classmethod
    def _env(cls, v: dict[str, str]) -> dict[str, str]:
        for k, val in v.items():
            if not _ENV_NAME.match(k):
                raise ValueError(f"env: {k!r} is not a valid environment variable name")
            no_newline(str(val), f"env.{k}")
        return {k: str(val) for k, val in v.items()}

    @field_validator("judge_gpus")
    @classmethod
    def _gpu_split(cls, v: int | None, info) -> int | None:
        gres = info.data.get("gres")
        if v is not None and v >= gpus_in_gres(gres):
            raise ValueError(f"judge_gpus={v} leaves no GPU for the agent: gres {gres!r} gives each task "
                             f"{gpus_in_gres(gres)} GPU(s)")
        return v

    # ---- derived values
    def merge_resources(self) -> JobResources:
        """The dependent job's resources: the array's, overridden by merge_job.

        When judging happens per shard the dependent job only merges, scores and reports, so it
        does not inherit the array's GPUs.
        """
        base = self.model_dump(include=set(JobResources.model_fields))
        if self.judge_per_shard:
            base["gres"] = None
        base.update(self.merge_job.model_dump(exclude_none=True))
        return JobResources.model_validate(base)

    def after_merge_commands(self) -> list[str]:
        if self.after_merge is not None:
            return list(self.after_merge)
        cmds = list(DEFAULT_AFTER_MERGE)
        if self.judge_per_shard:
            cmds = [c for c in cmds if " judge " not in c]
        return cmds

    @property
    def agent_gpus(self) -> int:
        return self.gpus - (self.judge_gpus or 0)


def parse_options(data: dict[str, Any] | None, where: str = "spec", **overrides: Any) -> SlurmOptions:
    """SlurmOptions from a spec's `slurm:` mapping; errors name the file and the `slurm.` field."""
    merged = dict(data or {})
    merged.update({k: v for k, v in overrides.items() if v is not None})
    try:
        return SlurmOptions.model_validate(merged)
    except ValidationError as e:
        err = e.errors()[0]
        field = ".".join(str(x) for x in err["loc"]) or "slurm"
        msg = err["msg"].removeprefix("Value error, ")
        last = str(err["loc"][-1]) if err["loc"] else ""
        msg = msg.removeprefix(f"{last}: ")
        raise SlurmOptionsError(f"{where}: field 'slurm.{field}': {msg}") from e
