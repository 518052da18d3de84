"""An AgentLeak scenario: a task for a multi-agent system that holds sensitive records, and what must
not leave which channel.

The vault is a list of fields, each keyed by the record it belongs to and its field name (never
flattened by field name: two records may both have a ``name``). Every field says what kind of
secret it is (category, sensitivity weight, tier: a canary token, a format-valid identifier, a
natural-language fact). ``allowed`` says, per channel, which fields may appear there (what the task
needs); anything else that shows up on a channel is a leak on that channel.

Channels (the paper's seven): C1 final output, C2 inter-agent messages, C3 tool inputs, C4 tool
outputs, C5 memory writes, C6 logs (each action's reasoning), C7 artifacts.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Vertical = Literal["healthcare", "finance", "legal", "corporate"]
VERTICALS: tuple[Vertical, ...] = ("healthcare", "finance", "legal", "corporate")

Topology = Literal["single", "pair", "team"]
"""single: one agent with the tools; pair: a coordinator and one worker; team: a coordinator and 2+
workers with roles and delegation."""
TOPOLOGIES: tuple[Topology, ...] = ("single", "pair", "team")

Channel = Literal["C1", "C2", "C3", "C4", "C5", "C6", "C7"]
CHANNELS: dict[str, str] = {"C1": "final output", "C2": "inter-agent messages", "C3": "tool inputs",
                            "C4": "tool outputs", "C5": "memory writes", "C6": "logs", "C7": "artifacts"}
INTERNAL: tuple[str, ...] = ("C2", "C3", "C4", "C5", "C6", "C7")  # everything but the final output

FieldCategory = Literal["PHI", "PII", "PCI", "other"]
FieldTier = Literal["canary", "identifier", "fact"]
FieldKind = Literal["name", "ssn", "card", "iban", "account", "routing", "phone", "email", "address", "date",
                    "icd10", "mrn", "id", "money", "text"]

AttackLevel = Literal["A0", "A1", "A2"]
Family = Literal["F1", "F2", "F3", "F4", "F5", "F6"]
FAMILIES: dict[str, str] = {"F1": "prompt and instruction", "F2": "indirect, through tools", "F3": "memory and persistence",
                            "F4": "multi-agent coordination", "F5": "reasoning and chain of thought",
                            "F6": "evasion and obfuscation"}
Surface = Literal["user_request", "tool_output", "memory", "peer_agent", "reasoning", "encoding"]
SURFACE_OF: dict[str, Surface] = {"F1": "user_request", "F2": "tool_output", "F3": "memory", "F4": "peer_agent",
                                  "F5": "reasoning", "F6": "encoding"}


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Record(_Strict):
    """One record of the vault: a patient, a customer, a case, an employee..."""

    id: str  # stable within the scenario ("r1")
    type: str  # patient, provider_note, customer, transaction_dispute, legal_case, client_intake, candidate, employee
    subject: str  # whom it is about (a display name)


class VaultField(_Strict):
    """One sensitive value, keyed by record and field."""

    id: str  # "<record id>.<field>", unique in the scenario
    record: str  # Record.id
    field: str  # field name within its record (ssn, diagnosis, ...)
    value: str  # lists are joined with ", "
    category: FieldCategory = "other"
    weight: int = Field(3, ge=1, le=5)  # contextual sensitivity
    tier: FieldTier = "fact"
    kind: FieldKind = "text"  # what it looks like: how tier-2 detection validates it
    # an empty marker ("None", "N/A", an empty list) that says something but cannot be found by
    # matching: a detector must not match it verbatim (it would flag every "none" in a reply)
    generic: bool = False

    @model_validator(mode="after")
    def _id_matches(self) -> "VaultField":
        if self.id != f"{self.record}.{self.field}":
            raise ValueError(f"field id '{self.id}' must be '<record>.<field>' ('{self.record}.{self.field}')")
        return self


class Tool(_Strict):
    """A sandboxed tool over the scenario's own records (deterministic; nothing leaves the sandbox)."""

    name: str
    description: str
    action: Literal["lookup", "search", "list", "update", "send"] = "lookup"
    records: list[str] = Field(default_factory=list)  # record ids it can read ([] = every record)
    fields: list[str] = Field(default_factory=list)  # field names it returns ([] = every field)
    input_schema: dict[str, Any] = Field(default_factory=dict)  # JSON schema of its arguments


class Agent(_Strict):
    id: str
    role: str  # coordinator, worker, specialist, reviewer, analyst, assistant
    clearance: Literal["public", "restricted", "confidential"] = "restricted"
    tools: list[str] = Field(default_factory=list)  # Tool.name
    brief: str = ""  # what it is for, in its system prompt


class Attack(_Strict):
    """An attack and where it is injected (A0: none)."""

    level: AttackLevel = "A0"
    family: Family | None = None
    cls: str | None = None  # attack class, e.g. direct_prompt_injection
    payload: str | None = None
    surface: Surface | None = None
    target_fields: list[str] = Field(default_factory=list)  # vault field ids it tries to extract

    @model_validator(mode="after")
    def _consistent(self) -> "Attack":
        if self.level == "A0":
            if self.payload or self.family:
                raise ValueError("an A0 scenario carries no attack (payload and family must be empty)")
        elif not (self.payload and self.family):
            raise ValueError(f"an {self.level} attack needs a family and a payload")
        if self.family and self.surface is None:
            self.surface = SURFACE_OF[self.family]
        return self


class Success(_Strict):
    """When the task counts as done: rule checks where the output is verifiable, a judge otherwise."""

    must_include: list[str] = Field(default_factory=list)  # vault field ids whose value the answer must state
    must_call: list[str] = Field(default_factory=list)  # tools the system must have used
    criteria: list[str] = Field(default_factory=list)  # for the task judge, in words


class Scenario(_Strict):
    id: str
    vertical: Vertical
    task: str  # the user's request
    privacy_instruction: str = ""
    topology: Topology
    agents: list[Agent]
    records: list[Record]
    vault: list[VaultField]
    subject: str | None = None  # the record the request is about (None: the request names no record the vault holds)
    allowed: dict[Channel, list[str]] = Field(default_factory=dict)  # channel -> vault field ids allowed on it
    tools: list[Tool] = Field(default_factory=list)
    attack: Attack = Field(default_factory=Attack)
    success: Success = Field(default_factory=Success)
    source: str = ""  # where it was loaded from
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _safe_id(cls, v: str) -> str:
        if not v or any(c in v for c in "/\\|") or v in (".", "..") or v.startswith("."):
            raise ValueError(f"scenario id '{v}' must be a plain name (no /, \\, | or leading .)")
        return v

    @model_validator(mode="after")
    def _references(self) -> "Scenario":
        records = {r.id for r in self.records}
        fields = {f.id for f in self.vault}
        tools = {t.name for t in self.tools}
        if len(fields) != len(self.vault):
            raise ValueError("vault field ids must be unique")
        for f in self.vault:
            if f.record not in records:
                raise ValueError(f"vault field '{f.id}' names unknown record '{f.record}'")
        for ch, ids in self.allowed.items():
            bad = [i for i in ids if i not in fields]
            if bad:
                raise ValueError(f"allowed.{ch} names unknown vault fields {bad}")
        for a in self.agents:
            bad = [t for t in a.tools if t not in tools]
            if bad:
                raise ValueError(f"agent '{a.id}' has unknown tools {bad}")
        bad = [i for i in self.attack.target_fields + self.success.must_include if i not in fields]
        if bad:
            raise ValueError(f"attack/success name unknown vault fields {bad}")
        if self.subject is not None and self.subject not in records:
            raise ValueError(f"subject '{self.subject}' is not a record")
        want = {"single": (1, 1), "pair": (2, 2), "team": (3, 99)}[self.topology]
        if not want[0] <= len(self.agents) <= want[1]:
            raise ValueError(f"topology {self.topology} needs {want[0]}{'+' if want[1] > 3 else ''} agents, "
                             f"got {len(self.agents)}")
        return self

    # -- what the shared layers and the metrics ask ---------------------------------------------
    @property
    def category(self) -> str:
        return self.vertical

    def field(self, field_id: str) -> VaultField:
        for f in self.vault:
            if f.id == field_id:
                return f
        raise KeyError(field_id)

    def allowed_on(self, channel: str) -> set[str]:
        """Vault field ids that may appear on ``channel`` (nothing, where the scenario says nothing)."""
        return set(self.allowed.get(channel, []))  # type: ignore[call-overload]

    def forbidden_on(self, channel: str) -> list[VaultField]:
        """Every vault field that must not appear on ``channel``."""
        ok = self.allowed_on(channel)
        return [f for f in self.vault if f.id not in ok]
