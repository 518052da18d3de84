"""RunSpec: a whole run as one validated object, from a YAML file and/or command-line flags.

The run id is derived from the spec's content unless given, so rerunning the same command lands
in the same directory and resumes instead of starting over.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from localbench.errors import UserError, field_error, yaml_error

DEFAULT_MODEL = "smollm2-135m"


class SpecError(UserError, ValueError):
    """A spec file or flag that does not validate; names the file and field."""


class Models(BaseModel):
    """Which preset plays each role. user_sim, coordinator and judge default to the agent's."""

    model_config = ConfigDict(extra="forbid")

    agent: str = DEFAULT_MODEL
    user_sim: str | None = None
    judge: str | None = None

    def for_role(self, role: str) -> str:
        if role == "judge":
            return self.judge or self.agent
        if role == "user_sim":
            return self.user_sim or self.agent
        return self.agent


class EngineOptions(BaseModel):
    """How models are served: engine name and engine-specific knobs."""

    model_config = ConfigDict(extra="forbid")

    engine: Literal["auto", "hf", "vllm", "openai"] = "auto"
    base_url: str | None = None  # openai: the server's /v1 URL
    judge_base_url: str | None = None  # openai: a separate server for the judge
    grammar: Literal["xgrammar", "outlines"] = "xgrammar"  # hf only
    max_batch_size: int = Field(32, ge=1)
    prefix_cache_gb: float = Field(4.0, ge=0)  # hf only: prompt KV kept for reuse by later turns (0 = off)
    max_concurrency: int = Field(64, ge=1)  # openai: requests in flight
    max_retries: int = Field(2, ge=0)  # invalid replies retried with a new seed


NOT_RESULTS: dict[str, Any] = {
    "out": True, "run_id": True, "cache": True, "no_cache": True, "shard": True, "num_shards": True, "slurm": True,
    "serving": {"base_url": True, "judge_base_url": True, "max_concurrency": True, "max_batch_size": True,
                "prefix_cache_gb": True},
}


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


class RunSpec(BaseModel):
    """Everything that defines a run. Recorded, resolved, in runs/<id>/spec.yaml."""

    model_config = ConfigDict(extra="forbid")

    benchmark: Literal["asb"] = "asb"
    scenarios: str = "builtin"  # builtin | a directory | hf:NAME
    categories: list[str] | None = None  # None = all
    levels: list[str] = Field(default_factory=lambda: ["L0", "L1", "L2"])  # the paper's ladder
    limit: int | None = Field(None, ge=1)  # scenarios per category
    seeds: int = Field(1, ge=1)  # simulations per (scenario, level)
    seed: int = 0  # the run seed every request seed derives from
    max_rounds: dict[str, int] = Field(default_factory=dict)  # per-category overrides
    max_tokens: int = Field(200, ge=16)  # per agent turn
    judge_max_tokens: int = Field(400, ge=16)
    models: Models = Field(default_factory=Models)
    serving: EngineOptions = Field(default_factory=EngineOptions)
    out: str = "runs"
    run_id: str | None = None
    cache: str | None = None  # SQLite response cache path; default: <run dir>/cache.sqlite
    no_cache: bool = False
    shard: int | None = Field(None, ge=0)  # this process runs only shard `shard` of `num_shards`
    num_shards: int | None = Field(None, ge=1)
    slurm: dict[str, Any] = Field(default_factory=dict)  # sbatch options (see localbench/slurm)
    extra: dict[str, Any] = Field(default_factory=dict)  # benchmark-specific options

    @field_validator("levels")
    @classmethod
    def _levels_nonempty(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("at least one privacy level is required")
        return v

    def result_fields(self) -> dict[str, Any]:
        """The fields that determine the results: not where they go, how the work is split or
        scheduled, nor how a server is reached (a restarted server on a new port is the same run)."""
        return self.model_dump(mode="json", exclude=NOT_RESULTS)

    def content_hash(self) -> str:
        """Hash of what determines the results (``result_fields``)."""
        return hashlib.sha256(json.dumps(self.result_fields(), sort_keys=True).encode()).hexdigest()[:10]

    def differences(self, other: "RunSpec") -> list[str]:
        """``field: other's value → this one's`` for every result field that differs."""
        mine, theirs = _flat(self.result_fields()), _flat(other.result_fields())
        return [f"{k}: {theirs.get(k)!r} → {mine.get(k)!r}" for k in sorted(set(mine) | set(theirs))
                if mine.get(k) != theirs.get(k)]

    def select_shard(self, keys: list[str]) -> list[str]:
        """The units of work (simulation keys) that belong to this process's shard.

        Keys are sorted and dealt round-robin, so shards are balanced and stable whatever order
        the work was listed in; without a shard every key is returned.
        """
        ordered = sorted(keys)
        if self.shard is None or not self.num_shards:
            return ordered
        if self.shard >= self.num_shards:
            raise SpecError(f"shard {self.shard} is out of range for num_shards={self.num_shards}")
        return [k for i, k in enumerate(ordered) if i % self.num_shards == self.shard]

    @property
    def resolved_run_id(self) -> str:
        return self.run_id or f"{self.benchmark}-{self.content_hash()}"

    @property
    def run_dir(self) -> Path:
        return Path(self.out) / self.resolved_run_id


def load_spec(path: str | Path | None = None, **overrides: Any) -> RunSpec:
    """A RunSpec from an optional YAML file, with non-None overrides applied on top."""
    data: dict[str, Any] = {}
    where = "flags"
    if path is not None:
        p = Path(path)
        where = str(p)
        try:
            data = yaml.safe_load(p.read_text()) or {}
        except OSError as e:
            raise SpecError(f"{p}: cannot read spec: {e.strerror}") from e
        except yaml.YAMLError as e:
            raise SpecError(f"{p}: not valid YAML: {yaml_error(e)}") from e
        if not isinstance(data, dict):
            raise SpecError(f"{p}: a spec must be a mapping of fields")
    for k, v in overrides.items():
        if v is None:
            continue
        if "." in k:  # "models.agent" style
            head, tail = k.split(".", 1)
            data.setdefault(head, {})[tail] = v
        else:
            data[k] = v
    try:
        return RunSpec.model_validate(data)
    except ValidationError as e:
        raise SpecError(f"{where}: {field_error(e)}") from e
