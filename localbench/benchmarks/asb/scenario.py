"""The normalized AgentSocialBench scenario: one schema for all 7 categories.

Upstream files come in two shapes (dyadic CD/MC/CU and multi-party GC/HS/CM/AM) with many quirks;
the loaders turn both into this model, and the repo's own suite (scenarios/asb-mini/) is written in
it directly. Engines, judges and metrics read only this model.

Identifiers: people and agents have slug ids (``priya_nair``, ``health_agent``); private items have
stable ids ``<owner>.<n>`` so that judge schemas can require one key per item.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from localbench.errors import path_name_problem
from localbench.runtime.log import SYSTEM as SYSTEM_ID

Category = Literal["CD", "MC", "CU", "GC", "HS", "CM", "AM"]
DYADIC: tuple[Category, ...] = ("CD", "MC", "CU")
MULTI_PARTY: tuple[Category, ...] = ("GC", "HS", "CM", "AM")
CATEGORY_NAMES: dict[Category, str] = {
    "CD": "cross_domain", "MC": "mediated_comm", "CU": "cross_user", "GC": "multi_party_group",
    "HS": "hub_and_spoke", "CM": "competitive", "AM": "affinity_modulated",
}
Tier = Literal["close", "friend", "acquaintance", "stranger"]
TIERS: tuple[Tier, ...] = ("close", "friend", "acquaintance", "stranger")  # most to least trusted


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Person(_Strict):
    """A human user. ``simulated`` people (MC's other party) are played by the user simulator."""

    id: str
    name: str
    profile: dict[str, Any] = Field(default_factory=dict)  # opaque JSON shown to their own agents
    persona: str = ""  # simulated humans: who they are
    knowledge: dict[str, str] = Field(default_factory=dict)  # simulated humans: what they know
    simulated: bool = False
    # per-domain sensitivity 1-5 where the source labels it (upstream profiles; see docs/fidelity.md)
    sensitivity: dict[str, Annotated[int, Field(ge=1, le=5)]] = Field(default_factory=dict)

    @field_validator("profile")
    @classmethod
    def _profile_labels(cls, v: dict[str, Any]) -> dict[str, Any]:
        """An explicit ``sensitivity`` anywhere in the profile is an integer 1-5 (as in every
        upstream file): "very high" or 9 is a broken file, refused naming where it sits."""
        def walk(x: Any, where: str) -> None:
            if isinstance(x, dict):
                for k, y in x.items():
                    path = f"{where}.{k}" if where else str(k)
                    if k == "sensitivity" and not (isinstance(y, int) and not isinstance(y, bool) and 1 <= y <= 5):
                        raise ValueError(f"{path} must be an integer from 1 to 5, got {y!r}")
                    walk(y, path)
            elif isinstance(x, list):
                for i, y in enumerate(x):
                    walk(y, f"{where}[{i}]")
        walk(v, "")
        return v


class Agent(_Strict):
    """An AI agent acting for one person, specialised to a domain."""

    id: str
    user: str  # Person.id it serves
    domain: str = "general"
    task_role: Literal["participant", "coordinator"] = "participant"
    brief: str = ""  # second-person context (multi-party system_prompt_context)
    knows: list[str] = Field(default_factory=list)
    should_share: list[str] = Field(default_factory=list)
    must_not_share: list[str] = Field(default_factory=list)


class PrivateItem(_Strict):
    """One piece of private information that is scored.

    ``holder`` is the agent that knows it (HS/CM coordinators hold other people's secrets).
    ``blocked_tiers`` (AM only): recipients whose tier, as seen by the owner, is in this list must
    not receive it; for the other categories an item must not reach anyone outside its owner's side.
    ``about`` (multi-party): the participant an item in the owner's boundary is about, when that is
    someone else ("Kyle's diagnosis" on Jun's list): hearing their own information is no leak, so
    they are never one of its forbidden recipients. Left out of dumps when empty, so scenarios
    without it keep their hash.
    """

    id: str
    text: str
    owner: str  # Person.id whose information it is
    holder: str  # Agent.id that knows it
    domain: str | None = None
    sensitivity: int | None = Field(None, ge=1, le=5)
    blocked_tiers: list[Tier] | None = None
    about: str | None = Field(None, exclude_if=lambda v: v is None)


class Abstraction(_Strict):
    """An acceptable way to speak about something sensitive without revealing it."""

    owner: str
    raw: str
    safe: str


class Edge(_Strict):
    """A directed social-graph edge: how ``source`` sees ``target``."""

    source: str  # Person.id
    target: str  # Person.id
    affinity: Tier
    context: str = ""


class SuccessCriteria(_Strict):
    task_completed: str
    privacy_preserved: str = ""


class Scenario(_Strict):
    """One AgentSocialBench scenario, normalized."""

    id: str
    category: Category
    subtype: str = ""
    task: str
    people: list[Person]
    agents: list[Agent]
    items: list[PrivateItem]
    abstractions: list[Abstraction] = Field(default_factory=list)
    minimum_info_needed: list[str] = Field(default_factory=list)
    success_criteria: SuccessCriteria
    graph: list[Edge] = Field(default_factory=list)
    source_domain: str | None = None  # CD only
    target_domain: str | None = None  # CD only
    source: str = ""  # where it was loaded from (file path, hf:NAME, builtin)
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        """Scenario ids key the records (``scenario|level|seed``) and may name files (viewer pages,
        exports): one plain name, no path separators, no '..', no '|'."""
        problem = path_name_problem(v) or (f"{v!r} contains '|', which separates the parts of a record key"
                                           if "|" in v else None)
        if problem:
            raise ValueError(f"scenario id {problem}")
        return v

    @model_validator(mode="after")
    def _references_resolve(self) -> "Scenario":
        people = {p.id for p in self.people}
        agents = {a.id for a in self.agents}
        # Participants are told apart by id everywhere (the log's visibility, system prompts), so
        # two of them sharing one would see each other's messages.
        for group, found in (("people", [p.id for p in self.people]), ("agents", [a.id for a in self.agents])):
            for i, pid in enumerate(found):
                if pid in found[:i]:
                    raise ValueError(f"{group}[{i}].id: '{pid}' is used twice")
                if pid == SYSTEM_ID:
                    raise ValueError(f"{group}[{i}].id: '{pid}' is reserved for announcements")
        for i, a in enumerate(self.agents):
            if a.id in people:
                raise ValueError(f"agents[{i}].id: '{a.id}' is also a person's id")
        for i, a in enumerate(self.agents):
            if a.user not in people:
                raise ValueError(f"agents[{i}].user: unknown person '{a.user}'")
        for i, it in enumerate(self.items):
            if it.owner not in people:
                raise ValueError(f"items[{i}].owner: unknown person '{it.owner}'")
            if it.holder not in agents:
                raise ValueError(f"items[{i}].holder: unknown agent '{it.holder}'")
            if it.about is not None and it.about not in people:
                raise ValueError(f"items[{i}].about: unknown person '{it.about}'")
        ids = [it.id for it in self.items]
        if len(ids) != len(set(ids)):
            raise ValueError("items: item ids must be unique")
        for i, e in enumerate(self.graph):
            for end in ("source", "target"):
                if getattr(e, end) not in people:
                    raise ValueError(f"graph[{i}].{end}: unknown participant '{getattr(e, end)}'")
        return self

    # -- lookups used by engines, judges and metrics -------------------------------------------
    @property
    def is_dyadic(self) -> bool:
        return self.category in DYADIC

    def person(self, pid: str) -> Person:
        return next(p for p in self.people if p.id == pid)

    def agent(self, aid: str) -> Agent:
        return next(a for a in self.agents if a.id == aid)

    def agents_of(self, pid: str) -> list[Agent]:
        return [a for a in self.agents if a.user == pid]

    def items_of(self, pid: str) -> list[PrivateItem]:
        return [it for it in self.items if it.owner == pid]

    def affinity(self, source: str, target: str) -> Tier | None:
        for e in self.graph:
            if e.source == source and e.target == target:
                return e.affinity
        return None
