"""The run's record types: one versioned pydantic model per record kind, and the upgrade of old ones.

One schema per record kind, shared by every benchmark: ``Transcript`` (transcripts.jsonl),
``Judgment`` (judgments.jsonl) and ``ScenarioScore`` (scenario_scores.jsonl). Each carries a
``version``; what is the benchmark's own goes in ``payload``. Older records are upgraded as they
are read: version 1 (written before versions existed, no ``version`` field) by moving the fields
this schema does not know into ``payload``; versions 1 and 2 by renaming ``level`` (the one
benchmark's word the schema carried) to ``condition``, the contract's word for the axis a run
sweeps. A record from a newer localbench is refused with one line naming its version.
Every stage reads these files through ``runlog.store.RecordStore``, never as untyped dicts.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, ClassVar, Iterable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from localbench.errors import UserError, field_error


RECORD_VERSION = 3
"""The record schema this code writes; 1 is the untyped format before versions existed, 2 the
typed one whose condition field was called ``level``."""

RENAMED_BEFORE_V3 = {"level": "condition"}
"""Fields of versions 1 and 2 that version 3 renamed (old name -> new)."""


class RecordVersionError(UserError, ValueError):
    """A record written by a newer localbench, in a format this one does not know."""


class Record(BaseModel):
    """Base of every record kind: a version, a key, and the benchmark's own ``payload``."""

    model_config = ConfigDict(extra="forbid")
    kind: ClassVar[str] = "record"
    renamed_v1: ClassVar[dict[str, str]] = {}  # version 1 field name -> this schema's

    version: int = RECORD_VERSION
    key: str
    payload: dict[str, Any] = Field(default_factory=dict)  # the benchmark's own fields

    @model_validator(mode="before")
    @classmethod
    def _upgrade(cls, data: Any) -> Any:
        """Versions 1 and 2 renamed to version 3's names; version 1 (no ``version``): fields this
        schema does not know move into ``payload``."""
        if not isinstance(data, dict):
            return data
        version = data.get("version", 1)
        if isinstance(version, int) and version < 3:
            data = {RENAMED_BEFORE_V3.get(k, k): v for k, v in data.items()}
        if "version" in data:
            return data
        data = {cls.renamed_v1.get(k, k): v for k, v in data.items()}
        known = set(cls.model_fields)
        out = {k: v for k, v in data.items() if k in known}
        extra = {k: v for k, v in data.items() if k not in known}
        out["payload"] = {**extra, **(data.get("payload") or {})}
        out["version"] = 1
        return out

    @classmethod
    def parse(cls, data: dict[str, Any], where: str) -> "Record":
        """One record from a line's JSON; ``where`` (file:line) names it in errors."""
        version = data.get("version", 1) if isinstance(data, dict) else None
        if isinstance(version, int) and version > RECORD_VERSION:
            raise RecordVersionError(f"{where}: {cls.kind} record format version {version} is newer than this "
                                     f"localbench reads ({RECORD_VERSION}); upgrade localbench to read it")
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise UserError(f"{where}: not a {cls.kind} record: {field_error(e)}") from e

    def line(self) -> dict[str, Any]:
        """What is written: always the current version."""
        return {**self.model_dump(mode="json"), "version": RECORD_VERSION}


class LogEntry(BaseModel):
    """One entry of a simulation's conversation log, as written in its transcript
    (``runtime.log.ConversationLog`` writes them; kinds and channels are the simulator's)."""

    model_config = ConfigDict(extra="forbid")

    index: int
    round: int
    kind: str  # message, system, pass, done, failed, ... (runtime.log.DELIVERED are delivered)
    sender: str
    recipients: list[str] = Field(default_factory=list)
    channel: str = "none"
    visibility: list[str] = Field(default_factory=list)  # who may ever see it (sorted)
    content: str = ""
    role: str = ""  # model role that produced it; "" for system entries
    phase: str = ""  # engine phase (e.g. "agents", "users", "delivery")
    action: dict[str, Any] | None = None  # the parsed, schema-valid action
    call: dict[str, Any] | None = None  # GenerationResult.summary() of the call behind it
    seen: list[int] | None = None  # indices of log entries that were in this turn's prompt
    context: dict[str, Any] | None = None  # prompt tokens, budget, messages dropped to fit
    meta: dict[str, Any] = Field(default_factory=dict)


class Transcript(Record):
    """One simulation (a line of transcripts.jsonl): who ran it, how it ended, every log entry."""

    kind: ClassVar[str] = "transcript"

    scenario: str
    category: str  # the scenario's value on the benchmark's category axis
    condition: str  # the simulation's value on the benchmark's condition axis
    seed_index: int = 0
    model: str = ""  # the preset of the benchmark's primary role
    models: dict[str, str] = Field(default_factory=dict)  # role -> preset
    termination: str
    error: str | None = None  # the simulation raised: every metric of it fails
    traceback: str | None = None
    rounds: int = 0
    max_rounds: int | None = None
    entries: list[LogEntry] = Field(default_factory=list)
    n_messages: int = 0
    n_calls: int = 0
    n_failed_turns: int = 0
    failed_by_role: dict[str, int] = Field(default_factory=dict)
    tokens: dict[str, int] = Field(default_factory=lambda: {"in": 0, "out": 0})
    context_cuts: list[dict[str, Any]] = Field(default_factory=list)
    n_context_cuts: int = 0
    prompts: str = ""  # hash of the prompt templates
    schemas: str = ""  # hash of the output schemas used
    wall_s: float = 0.0
    finished_at: str = ""


class Judgment(Record):
    """One judge call's answer (a line of judgments.jsonl), a failure, or a rule's label."""

    kind: ClassVar[str] = "judgment"

    sim_key: str
    scenario: str = ""
    category: str = ""
    condition: str = ""
    seed_index: int = 0
    model: str = ""  # the simulation's primary preset
    judge: str  # the benchmark's name for this judge
    target: str  # what it labels
    rubric: str = ""
    rubric_hash: str = ""
    schema_hash: str = ""
    n_messages: int = 0
    truncated: int = 0
    sim_targets: dict[str, list[str]] | None = None  # every call planned for the simulation (judge -> targets)
    judge_model: str = ""  # the judge preset, or "rule" when no model was asked
    label: dict[str, Any] | None = None
    failure: str | None = None
    text: str | None = None  # the rejected reply of a failed call
    call: dict[str, Any] | None = None  # GenerationResult.summary()


class ScenarioScore(Record):
    """One simulation's metric values (a line of scenario_scores.jsonl)."""

    kind: ClassVar[str] = "scenario score"
    renamed_v1: ClassVar[dict[str, str]] = {"domain_pair": "group"}  # the only group version 1 had

    scenario: str
    category: str
    condition: str
    seed_index: int = 0
    model: str = ""
    judge: str = ""
    group: str | None = None  # a refinement of the category, for metrics the catalogue marks grouped
    metrics: dict[str, float | None] = Field(default_factory=dict)
    failed: list[str] = Field(default_factory=list)  # metrics that could not be computed
    unscored: str | None = None  # why its leakage could not be measured (never read as no leak)
    judge_stage_finishes: bool = False  # what ``unscored`` says is missing, the judge stage makes


def by_simulation(judgments: Iterable[Judgment]) -> dict[str, list[Judgment]]:
    """Judgments grouped by the simulation they judged (``sim_key``), in their order."""
    out: dict[str, list[Judgment]] = defaultdict(list)
    for j in judgments:
        out[j.sim_key].append(j)
    return out
