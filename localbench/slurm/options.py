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
# {startup_timeout} is slurm.serve_timeout: the server waits as long as the task waits for it
DEFAULT_SERVE_COMMAND = "localbench serve {model} --host 127.0.0.1 --port {port} --startup-timeout {startup_timeout}"

_TIME = re.compile(r"^(\d+-)?\d+(:\d{1,2}){0,2}$")
_MEM = re.compile(r"^\d+[KMGT]?$")
_SIGNAL = re.compile(r"^(?:B:)?(?:SIG)?([A-Z0-9]+)(?:@(\d+))?$")
_LONG_OPT = re.compile(r"^--[A-Za-z][A-Za-z0-9-]*(=.+)?$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Options localbench sets itself; setting them again in extra_sbatch would fight the renderer.
_OWNED = {"--array", "--output", "--error", "--job-name", "--dependency", "--requeue", "--no-requeue",
          "--signal", "--open-mode", "--parsable", "--nodes", "--ntasks-per-node"}
# extra_sbatch options that reserve hardware: a CPU-only merge job of a GPU array does not inherit them
_HARDWARE_OPTS = ("--exclusive", "--gres", "--gpus", "--gpu", "--mem", "--cpus", "--constraint", "--ntasks",
                  "--cores", "--sockets", "--threads", "--tres")
MERGE_CPU_CAP = 4  # a merge job that holds no GPU asks for at most this many CPUs,
MERGE_MEM_CAP_MB = 16 * 1024  # this much memory,
MERGE_TIME_CAP_S = 2 * 3600  # and, when it runs no judge step, this much time (unless merge_job says)
DEFAULT_SIGNAL_S = 60  # Slurm's warning time when --signal gives no @SECONDS


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


def time_seconds(t: str) -> int:
    """A Slurm time limit in seconds: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS."""
    days = 0
    if "-" in t:
        d, t = t.split("-", 1)
        days = int(d)
        parts = [int(x) for x in t.split(":")]
        h, m, sec = (parts + [0, 0])[:3]
        return days * 86400 + h * 3600 + m * 60 + sec
    parts = [int(x) for x in t.split(":")]
    if len(parts) == 1:
        return parts[0] * 60
    if len(parts) == 2:
        return parts[0] * 60 + parts[1]
    return parts[0] * 3600 + parts[1] * 60 + parts[2]


def signal_seconds(signal: str) -> int:
    """Seconds before the time limit that a --signal value (``B:USR1@120``) warns."""
    m = _SIGNAL.match(signal)
    return int(m.group(2)) if m and m.group(2) else DEFAULT_SIGNAL_S


def mem_mb(mem: str) -> int:
    """A Slurm memory size in MB (no suffix: MB)."""
    units = {"K": 1 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}
    return int(int(mem.rstrip("KMGT")) * units.get(mem[-1], 1))


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
    gres: str | None = None  # e.g. gpu:1, gpu:a100:4 (per node)
    constraint: str | None = None
    nodes: int | None = Field(None, ge=1)  # > 1: a multi-node job serving one model with Ray across its nodes

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
        """GPUs per node."""
        return gpus_in_gres(self.gres)

    @property
    def multi_node(self) -> bool:
        return (self.nodes or 1) > 1


class MergeJob(JobResources):
    """``slurm.merge_job``: the dependent job's own resources. A field left out takes the default
    that ``SlurmOptions.merge_resources`` derives; a field set to null is not asked for at all
    (the cluster's default)."""

    extra_sbatch: list[str] | None = None

    @field_validator("extra_sbatch")
    @classmethod
    def _extra(cls, v: list[str] | None) -> list[str] | None:
        return None if v is None else check_extra_sbatch(v)


def check_extra_sbatch(v: list[str]) -> list[str]:
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
    max_requeues: int = Field(3, ge=0)  # self-requeues at the warning signal before the task gives up
    # engines and GPUs
    serve: bool = False  # run the agent model in a `localbench serve` on a free port, not in-process
    serve_command: str = DEFAULT_SERVE_COMMAND  # placeholders {model} {port} {startup_timeout}
    serve_timeout: int = Field(900, ge=1)  # seconds to wait for the server to answer
    judge_gpus: int | None = Field(None, ge=1)  # of each task's GPUs, this many serve the judge
    tensor_parallel: bool = True  # each model uses all the GPUs it is given, tensor-parallel
    # stages
    judge_per_shard: bool = False  # judge inside each shard task instead of after the merge
    after_merge: list[str] | None = None  # commands the dependent job runs after merging ({run})
    merge_job: MergeJob = Field(default_factory=MergeJob)  # the dependent job's own resources
    ray_timeout: int = Field(600, ge=1)  # multi-node: seconds to wait for every node to join the Ray cluster
    # a judge served elsewhere (`study submit`'s judge server job): the merge job waits for this file,
    # judges at the /v1 URL it holds (openai engine) and holds no GPU of its own
    judge_url_file: str | None = None
    judge_wait: int = Field(4 * 3600, ge=1)  # seconds the merge job waits for that file and server

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
        return check_extra_sbatch(v)

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

    @field_validator("venv", "conda_env", "workdir", "scratch", "hf_home", "vllm_cache", "localbench_cache",
                     "judge_url_file")
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

    @field_validator("nodes")
    @classmethod
    def _nodes(cls, v: int | None, info) -> int | None:
        if v is not None and v > 1:
            if not gpus_in_gres(info.data.get("gres")):
                raise ValueError(f"nodes={v}: a multi-node task serves one model across the GPUs of its nodes; "
                                 "set slurm.gres (GPUs per node) too")
        return v

    # ---- derived values
    def merge_resources(self, judge_on_gpu: bool = False, judges: bool = True) -> tuple[JobResources, list[str]]:
        """The dependent job's resources and extra #SBATCH options.

        Each field of ``merge_job`` that is given wins (null: not asked for at all). The others
        follow the array, except that a merge job that holds no GPU (its judge, if any, is not
        served on a GPU: ``judge_on_gpu`` False) does not take the array's GPUs, nodes,
        constraint, partition, QoS or hardware options (``--exclusive``...), and asks for at most
        MERGE_CPU_CAP CPUs and MERGE_MEM_CAP_MB memory; one that runs no judge step (``judges``
        False) at most MERGE_TIME_CAP_S of time.
        """
        base = self.model_dump(include=set(JobResources.model_fields))
        extra = list(self.extra_sbatch)
        base["nodes"] = None  # the merge job's nodes are its own
        if not judge_on_gpu:
            base["gres"] = base["constraint"] = None
            if self.gpus:  # a GPU array's partition and QoS are for GPU jobs
                base["partition"] = base["qos"] = None
            if base["cpus_per_task"]:
                base["cpus_per_task"] = min(base["cpus_per_task"], MERGE_CPU_CAP)
            if base["mem"] and mem_mb(base["mem"]) > MERGE_MEM_CAP_MB:
                base["mem"] = f"{MERGE_MEM_CAP_MB // 1024}G"
            extra = [x for x in extra if not x.split("=", 1)[0].startswith(_HARDWARE_OPTS)]
        if not judges and base["time"] and time_seconds(base["time"]) > MERGE_TIME_CAP_S:
            base["time"] = f"{MERGE_TIME_CAP_S // 3600:02d}:00:00"
        given = self.merge_job.model_fields_set
        for k in JobResources.model_fields:
            if k in given:
                base[k] = getattr(self.merge_job, k)
        if "extra_sbatch" in given:
            extra = list(self.merge_job.extra_sbatch or [])
        return JobResources.model_validate(base), extra

    def check_time_limits(self, where: str, merge: JobResources | None = None) -> None:
        """Refuse a warning signal that comes as early as (or earlier than) the job's time limit:
        the task would stop and requeue itself at once, over and over."""
        if not self.signal:
            return
        warn = signal_seconds(self.signal)
        for field, res in (("time", self), ("merge_job.time", merge)):
            if res is None or not res.time:
                continue
            limit = time_seconds(res.time)
            if warn >= limit:
                raise SlurmOptionsError(
                    f"{where}: field 'slurm.signal': the warning {self.signal.removeprefix('B:')} comes {warn} s "
                    f"before the time limit, but slurm.{field} {res.time!r} is {limit} s: the job would stop and "
                    f"requeue itself at once, again and again. Give a later warning (e.g. USR1@{max(limit // 10, 1)}) "
                    f"or a longer slurm.{field}")

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


def command_name(cmd: str) -> str | None:
    """'localbench judge {run}' -> 'judge'; None for anything that is not a localbench command."""
    words = cmd.split()
    return words[1] if len(words) > 1 and words[0] == "localbench" else None
