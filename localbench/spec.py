"""RunSpec: a whole run as one validated object, from a YAML file and/or command-line flags.

The run id is derived from the spec's content unless given, so rerunning the same command lands
in the same directory and resumes instead of starting over.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from localbench.design import Design
from localbench.registry import DEFAULT_BENCHMARK, UnknownBenchmark, design_of
from localbench.errors import UserError, field_error, path_name_problem, yaml_error

DEFAULT_MODEL = "smollm2-135m"
"""The packaged small model: the primary role's preset when a spec names none."""

NO_JUDGE = "none"
"""The judge preset that means no judge (`--judge none`): the judge stage makes no call and the
scores are the benchmark's rule-based part alone, where its scores stand without a judge."""


MAX_RUN_ID_BYTES = 200
"""A run id is one directory name: file systems allow 255 bytes, and shard and temp names add to it."""


class SpecError(UserError, ValueError):
    """A spec file or flag that does not validate; names the file and field."""


class EngineOptions(BaseModel):
    """How models are served: engine name and engine-specific knobs."""

    model_config = ConfigDict(extra="forbid")

    engine: Literal["auto", "hf", "vllm", "openai"] = "auto"  # which engine serves the models (auto: openai with a base_url, else vllm on a GPU, else hf)
    base_url: str | None = None  # openai: the server's /v1 URL
    judge_base_url: str | None = None  # openai: a separate server for the judge
    # openai: a server of its own for any role (role -> its /v1 URL), before base_url and
    # judge_base_url: a simulated user served by another model than the agent's
    base_urls: dict[str, str] = Field(default_factory=dict)
    # openai: the name of the environment variable that holds the servers' API key (a server
    # started with vLLM's --api-key); the key itself never goes in a spec or a run's files
    api_key_env: str | None = None
    grammar: Literal["xgrammar", "outlines"] = "xgrammar"  # hf only
    # the most requests computed together: hf's forward pass (unset: 32), vLLM's running sequences
    # (max_num_seqs; unset: vLLM's own for the card, 1,024 on an H100)
    max_batch_size: int | None = Field(None, ge=1)
    prefix_cache_gb: float = Field(4.0, ge=0)  # hf only: prompt KV kept for reuse by later turns (0 = off)
    # live simulations, requests in flight to a served engine and judge calls in flight; unset: from
    # the device (serving.device.concurrency_limits: 64 on CPU, the engine's batch on a GPU), the
    # values used recorded in spec.yaml (simulation.concurrency, judge.concurrency)
    max_concurrency: int | None = Field(None, ge=1)
    max_retries: int = Field(2, ge=0)  # invalid replies retried with a new seed
    # the same request gives the same reply however many run at once: vLLM's batch-invariant
    # kernels where the installed vLLM has them, one row per forward pass (and no prefix reuse)
    # on hf; refused where neither holds (docs/simulation.md, "Batch invariance")
    batch_invariant: bool = False
    # openai: seconds one request may take in all (``--request-timeout``)
    request_timeout_s: float = Field(600.0, gt=0)
    # openai: seconds the server may send nothing at all (``--first-byte-timeout``) before it is asked
    # GET /health and, silent there too, named as hung (localbench.serving.openai_engine)
    first_byte_timeout_s: float = Field(30.0, gt=0)
    # before the first simulation (and the first judge call), each engine answers one constrained
    # request of each schema it will be sent; a refusal stops the run in seconds (runtime.preflight)
    preflight: bool = True


NOT_RESULTS: dict[str, Any] = {
    "out": True, "run_id": True, "judge_eval": True, "cache": True, "no_cache": True, "shard": True, "num_shards": True, "slurm": True,
    "serving": {"base_url": True, "judge_base_url": True, "base_urls": True, "api_key_env": True,
                "max_concurrency": True, "max_batch_size": True,
                "prefix_cache_gb": True, "request_timeout_s": True, "first_byte_timeout_s": True, "preflight": True},
}


def _flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict) and v:
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


OLD_CONDITIONS = "levels"
"""The spec field ``conditions`` was called this before (AgentSocialBench's word); still read."""


def with_todays_names(fields: dict[str, Any]) -> dict[str, Any]:
    """A spec's fields with ``levels`` (what ``conditions`` was called before) under today's name: a
    spec file or a recorded spec.yaml written before the rename reads as one written today. Both
    names given is a ValueError."""
    if OLD_CONDITIONS not in fields:
        return fields
    old, new = fields[OLD_CONDITIONS], fields.get("conditions")
    if old is not None and new is not None:
        raise ValueError(f"'{OLD_CONDITIONS}' is the earlier name of 'conditions': give one of them")
    return {**{k: v for k, v in fields.items() if k != OLD_CONDITIONS}, "conditions": old if new is None else new}

RECORDED = "recorded"
"""Validation context key: the spec being read is one a run recorded (``parse_spec(recorded=True)``)."""


class RunSpec(BaseModel):
    """Everything that defines a run. Recorded, resolved, in runs/<id>/spec.yaml.

    What a field means and defaults to comes from the benchmark's design
    (``localbench.design``): ``conditions`` are values of its condition axis (AgentSocialBench's
    privacy levels, AgentLeak's settings, SopriBench's attackers), ``categories`` and ``max_rounds``
    keys values of its category axis, ``models`` keys its roles. A spec is resolved when it is
    validated: unset conditions and roles are filled in from the design, so the recorded spec says
    what ran. ``levels``, the field's name before, is read as ``conditions``.
    """

    model_config = ConfigDict(extra="forbid")

    benchmark: str = DEFAULT_BENCHMARK  # a registered benchmark (`localbench data design` lists them)
    scenarios: str = "builtin"  # builtin | a directory | hf:NAME
    categories: list[str] | None = None  # None = all
    conditions: list[str] | None = Field(None, validate_default=True)  # None = the design's default conditions
    limit: int | None = Field(None, ge=1)  # scenarios per category
    seeds: int = Field(1, ge=1)  # simulations per (scenario, condition)
    seed: int = 0  # the run seed every request seed derives from
    max_rounds: dict[str, Annotated[int, Field(ge=1)]] = Field(default_factory=dict)  # per-category overrides of the design's limits
    max_tokens: int = Field(200, ge=16)  # per agent turn
    judge_max_tokens: int = Field(400, ge=16)  # per judge call; a call whose schema bounds a longer reply gets that room
    # the `localbench judges eval` outputs that measured this run's judges: one eval directory, a list
    # of them, or a folder of them (localbench.judging.trust). The report's "How far to trust these
    # numbers" reads them; a judge no eval measured is warned of, one not above its best cheater too
    # (not a result field: the scores are the same)
    judge_eval: str | list[str] | None = None
    models: dict[str, str | None] = Field(default_factory=dict, validate_default=True)  # role -> preset
    serving: EngineOptions = Field(default_factory=EngineOptions)  # how the models are served (below)
    out: str = "runs"  # the folder the run directory goes in
    run_id: str | None = None  # the run directory's name; None: BENCHMARK-HASH of the result fields
    cache: str | None = None  # SQLite response cache path; default: <run dir>/cache.sqlite
    no_cache: bool = False  # neither read nor write the response cache
    shard: int | None = Field(None, ge=0)  # this process runs only shard `shard` of `num_shards`
    num_shards: int | None = Field(None, ge=1)  # how many shards the work is dealt into (with shard)
    slurm: dict[str, Any] = Field(default_factory=dict)  # sbatch options (see localbench/slurm)
    extra: dict[str, Any] = Field(default_factory=dict)  # the benchmark's own settings (its design's ``settings``)

    @field_validator("run_id")
    @classmethod
    def _run_id(cls, v: str | None) -> str | None:
        """The run directory is out/<run_id>: one directory name, never a path out of ``out``."""
        problem = None if v is None else path_name_problem(v)
        if v is not None and not problem and len(v.encode()) > MAX_RUN_ID_BYTES:
            problem = f"{len(v.encode())} bytes long, over the bound of {MAX_RUN_ID_BYTES} (a directory name)"
        if problem:
            raise ValueError(f"the run id names the run directory inside 'out': {problem}")
        return v

    @field_validator("benchmark")
    @classmethod
    def _known_benchmark(cls, v: str) -> str:
        design_of(v)  # UnknownBenchmark (a ValueError) names the registered ones
        return v

    @staticmethod
    def _design(info: ValidationInfo) -> Design | None:
        name = info.data.get("benchmark")
        try:
            return design_of(name) if name else None
        except UnknownBenchmark:
            return None  # reported on the benchmark field

    @model_validator(mode="before")
    @classmethod
    def _old_names(cls, data: Any) -> Any:
        """``levels`` (the field's name in specs written before ``conditions``) read as ``conditions``."""
        return with_todays_names(data) if isinstance(data, dict) else data

    @field_validator("conditions")
    @classmethod
    def _conditions(cls, v: list[str] | None, info: ValidationInfo) -> list[str] | None:
        d = cls._design(info)
        if d is None:
            return v
        if v is None:
            return list(d.condition.default)
        if not v:
            raise ValueError(f"at least one {d.condition.label.lower()} is required")
        return [d.condition.aliases.get(x, x) for x in v]  # another name for a value: recorded as the value

    @field_validator("max_rounds")
    @classmethod
    def _max_rounds(cls, v: dict[str, int], info: ValidationInfo) -> dict[str, int]:
        d = cls._design(info)
        for k in v:
            if d is not None and d.max_rounds and k not in d.max_rounds:
                raise ValueError(f"'{k}' is not a {d.category.label.lower()} of {d.title} "
                                 f"(expected one of {', '.join(d.max_rounds)})")
        return v

    @field_validator("extra")
    @classmethod
    def _settings(cls, v: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        """Checked against the benchmark's settings model (a misspelt or out-of-range setting is an
        error naming ``extra.<setting>``); kept as given, so a spec hashes as it always did. A spec a
        run recorded (``parse_spec(..., recorded=True)``) keeps a key its benchmark no longer
        declares, unread, so that a run made before still reads and resumes."""
        d = cls._design(info)
        if d is None:
            return v
        known = d.settings.model_fields
        unknown = {k: x for k, x in v.items() if k not in known}
        if unknown and not (info.context or {}).get(RECORDED):
            raise ValueError(f"'{next(iter(unknown))}' is not a setting of {d.title} (its settings: "
                             f"{', '.join(known) or 'none'}; `localbench data design --benchmark {d.name}`)")
        ok = d.settings.model_validate({k: x for k, x in v.items() if k in known})
        return {**ok.model_dump(mode="json", exclude_unset=True), **unknown}

    @field_validator("models")
    @classmethod
    def _models(cls, v: dict[str, str | None], info: ValidationInfo) -> dict[str, str | None]:
        d = cls._design(info)
        if d is None:
            return v
        if "agent" in v and "agent" not in d.role_names and d.primary_role not in v:
            # a spec written for another benchmark names its model under-test "agent": here it plays
            # the primary role (SopriBench's attacker), and the other roles default to it
            import warnings

            warnings.warn(f"{d.title} has no role 'agent': models.agent ({v['agent']}) plays the {d.primary_role}",
                          stacklevel=2)
            v = {(d.primary_role if k == "agent" else k): x for k, x in v.items()}
        unknown = [k for k in v if k not in d.role_names]
        if unknown:
            raise ValueError(f"{d.title} has no role '{unknown[0]}' (roles: {', '.join(d.role_names)})")
        out: dict[str, str | None] = {r: v.get(r) for r in d.role_names}
        out[d.primary_role] = out[d.primary_role] or DEFAULT_MODEL
        return out

    @model_validator(mode="after")
    def _served_roles(self) -> "RunSpec":
        unknown = [r for r in self.serving.base_urls if r not in self.design.role_names]
        if unknown:
            raise ValueError(f"serving.base_urls: {self.design.title} has no role '{unknown[0]}' "
                             f"(roles: {', '.join(self.design.role_names)})")
        return self

    # -- what the design says about this spec ---------------------------------------------------
    @property
    def design(self) -> Design:
        return design_of(self.benchmark)

    def model_for(self, role: str) -> str:
        """The preset that plays ``role``: the spec's, else the role it defaults to, else the
        packaged default model."""
        d = self.design
        name: str | None = role
        while name is not None:
            preset = self.models.get(name)
            if preset:
                return preset
            name = d.role(name).default
        return DEFAULT_MODEL

    def with_model(self, role: str, preset: str) -> "RunSpec":
        """This spec with ``role`` played by ``preset``."""
        self.design.role(role)  # KeyError naming the roles for an unknown one
        return self.model_copy(update={"models": {**self.models, role: preset}})

    def with_serving(self, **changes: Any) -> "RunSpec":
        """This spec with the non-None ``changes`` to its serving options, checked as a flag's are."""
        changes = {k: v for k, v in changes.items() if v is not None}
        if not changes:
            return self
        try:
            serving = EngineOptions.model_validate({**self.serving.model_dump(), **changes})
        except ValidationError as e:
            raise SpecError(f"flags: {field_error(e, prefix='serving.')}") from e
        return self.model_copy(update={"serving": serving})

    @property
    def settings(self) -> Any:
        """The benchmark's own settings, typed (its design's ``settings`` model over ``extra``)."""
        s = self.design.settings
        return s.model_validate({k: v for k, v in self.extra.items() if k in s.model_fields})

    def resolved_models(self) -> dict[str, str]:
        """The preset each role runs with (its own, else the one it defaults to), or, for a judge that
        needs no model, that judge's name: what ``models`` leaves as null, spelt out for spec.yaml."""
        out = {role: self.model_for(role) for role in self.design.role_names}
        if self.rule_judge:
            out[self.design.judge_role] = self.rule_judge
        return out

    @property
    def judge_model(self) -> str:
        return self.model_for(self.design.judge_role)

    @property
    def rule_judge(self) -> str | None:
        """The model-free judge the spec asks for (``extra.judge`` naming one of the judge role's
        ``rules``, e.g. SopriBench's exact matcher); None when a model judges."""
        name = self.extra.get("judge")
        return name if isinstance(name, str) and name in self.design.role(self.design.judge_role).rules else None

    @property
    def judged(self) -> bool:
        """False with `--judge none` (``NO_JUDGE``)."""
        return self.judge_model != NO_JUDGE

    def url_for(self, role: str) -> str | None:
        """The server a role is reached at with the openai engine: its own (``serving.base_urls``),
        else the judge's (``judge_base_url``) for the judge, else ``base_url``."""
        s = self.serving
        if role in s.base_urls:
            return s.base_urls[role]
        return (s.judge_base_url or s.base_url) if role == self.design.judge_role else s.base_url

    def max_rounds_for(self, category: str) -> int:
        """A category's round limit: the spec's override, else the design's default."""
        return int(self.max_rounds.get(category, self.design.max_rounds[category]))

    def result_fields(self) -> dict[str, Any]:
        """The fields that determine the results: not where they go, how the work is split or
        scheduled, nor how a server is reached (a restarted server on a new port is the same run).

        ``serving.batch_invariant`` is one, but only when set: a spec without it (every spec written
        before it existed) hashes as it always did, so existing runs keep their run id."""
        out = self.model_dump(mode="json", exclude=NOT_RESULTS)
        if not out.get("serving", {}).get("batch_invariant"):
            out.get("serving", {}).pop("batch_invariant", None)
        return out

    def content_hash(self) -> str:
        """Hash of what determines the results (``result_fields``), ``conditions`` hashed under its
        earlier name ``levels`` so that a run keeps the id it had before the rename."""
        fields = self.result_fields()
        fields = {(OLD_CONDITIONS if k == "conditions" else k): v for k, v in fields.items()}
        return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()[:10]

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
            raise SpecError(f"field 'shard': {self.shard} is out of range for num_shards={self.num_shards} "
                            f"(shards are 0 to {self.num_shards - 1})")
        return [k for i, k in enumerate(ordered) if i % self.num_shards == self.shard]

    @property
    def resolved_run_id(self) -> str:
        return self.run_id or f"{self.benchmark}-{self.content_hash()}"

    @property
    def run_dir(self) -> Path:
        return Path(self.out) / self.resolved_run_id


def read_yaml_fields(path: str | Path, what: str, error: type[Exception]) -> dict[str, Any]:
    """A YAML file of fields (a spec, a study), unvalidated; ``error`` (naming the file and ``what``
    it should be) when it cannot be read, is not YAML or is not a mapping."""
    p = Path(path)
    try:
        data = yaml.safe_load(p.read_text()) or {}
    except OSError as e:
        raise error(f"{p}: cannot read the {what}: {e.strerror}") from e
    except yaml.YAMLError as e:
        raise error(f"{p}: not valid YAML: {yaml_error(e)}") from e
    if not isinstance(data, dict):
        raise error(f"{p}: a {what} must be a mapping of fields")
    return data


def read_spec_file(path: str | Path) -> dict[str, Any]:
    """A spec file's fields, unvalidated: what a command reads once and then parses once."""
    return read_yaml_fields(path, "spec", SpecError)


def parse_spec(data: dict[str, Any], where: str = "flags", prefix: str = "", recorded: bool = False,
               **overrides: Any) -> RunSpec:
    """The one place a RunSpec is parsed from fields: ``data`` with non-None ``overrides`` on top
    ("models.agent" style keys set one nested field); a bad field is a SpecError naming ``where``.
    ``recorded``: a run's own spec.yaml (settings its benchmark no longer declares are kept, unread)."""
    try:
        data = dict(with_todays_names(data))  # first, so that a flag overrides a file's earlier name
    except ValueError as e:
        raise SpecError(f"{where}: {e}") from e
    for k, v in overrides.items():
        if v is None:
            continue
        if "." in k:
            head, tail = k.split(".", 1)
            nested = data.get(head)
            data[head] = {**(nested if isinstance(nested, dict) else {}), tail: v}
        else:
            data[k] = v
    try:
        return RunSpec.model_validate(data, context={RECORDED: recorded})
    except ValidationError as e:
        raise SpecError(f"{where}: {field_error(e, prefix=prefix)}") from e


def load_spec(path: str | Path | None = None, **overrides: Any) -> RunSpec:
    """A RunSpec from an optional YAML file, with non-None overrides applied on top."""
    if path is None:
        return parse_spec({}, "flags", **overrides)
    return parse_spec(read_spec_file(path), str(Path(path)), **overrides)
