"""What an attacker is, what it returns, and how a run's condition names one.

A simulation is one attacker investigating one user. The condition axis value (``spec.conditions``)
names the attacker, any ablation flags and any defense: ``text``, ``post``, ``selfdisc``,
``single``, ``holmeseye``, ``abductive`` (the paper's names for its baselines, ``PAPER_NAMES``, are
accepted too), ``abductive-no-verifier`` (an ablation), ``single+sanitized`` (the
attacker against the sanitizer's rewrite of the user's posts), and the reference attackers
``oracle``, ``none`` and ``majority`` (``reference``), which check the scoring.

Every attacker's final answer is one object keyed by the 28 slot names of the user's taxonomy
(``taxonomy.py``; ``profile_schema``): each
key optional, each at most once (a JSON object cannot repeat a key, and the grammar writes the keys
in slot order), its value ``{value, posts, evidence}``. So an attacker gives one value per attribute,
the key says which attribute, and no judge has to guess it; hedging across several guesses cannot
be expressed. In code the answer is a list of ``Inference`` (one per slot, in slot order).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pkgutil import resolve_name
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from localbench.benchmarks.sopri.taxonomy import _BY_NAME as ANY_SLOT
from localbench.benchmarks.sopri.taxonomy import DEFAULT_TAXONOMY, known_slot, taxonomy as taxonomy_named

if TYPE_CHECKING:
    from localbench.benchmarks.sopri.scenario import User
    from localbench.benchmarks.sopri.toolbox import Toolbox
    from localbench.runtime.calls import SimulationCalls
    from localbench.runtime.log import ConversationLog

MAX_INFERENCES = 12
VALUE_CHARS = 120
EVIDENCE_CHARS = 200


class Inference(BaseModel):
    """One attribute's answer: the slot (a key of the answer object), its value, the posts it rests on, why."""

    model_config = ConfigDict(extra="forbid")

    attribute: str
    value: str = Field(max_length=VALUE_CHARS)
    posts: list[str] = Field(default_factory=list)
    evidence: str = Field("", max_length=EVIDENCE_CHARS)

    _a_slot = field_validator("attribute")(classmethod(lambda cls, v: known_slot(v)))


def answer_schema(post_ids: list[str]) -> dict[str, Any]:
    """The JSON schema of one attribute's answer, cited posts an enum of this user's post ids."""
    return {"type": "object", "additionalProperties": False, "required": ["value", "posts", "evidence"],
            "properties": {"value": {"type": "string", "minLength": 1, "maxLength": VALUE_CHARS},
                           "posts": {"type": "array", "items": {"enum": list(post_ids)}, "maxItems": 3},
                           "evidence": {"type": "string", "maxLength": EVIDENCE_CHARS}}}


def profile_schema(post_ids: list[str], taxonomy: str = DEFAULT_TAXONOMY) -> dict[str, Any]:
    """An attacker's final answer: ``{slot: {value, posts, evidence}, ...}`` over the 28 slots of
    ``taxonomy`` (the user's: ``User.taxonomy``), every slot optional, none repeatable, nothing else
    (no ``maxProperties``: vLLM's xgrammar backend refuses it, and 28 is the cap)."""
    return {"type": "object", "additionalProperties": False,
            "properties": {s: answer_schema(post_ids) for s in taxonomy_named(taxonomy).names}}


def profile_of(answer: dict[str, Any]) -> list[Inference]:
    """A decoded answer object as inferences, one per slot in slot order (a key of neither taxonomy raises)."""
    unknown = sorted(set(answer) - set(ANY_SLOT))
    if unknown:
        raise ValueError(f"answer names unknown attributes {unknown}")
    return [Inference(attribute=s, **answer[s]) for s in ANY_SLOT if s in answer]


def answer_of(inferences: list[Inference]) -> dict[str, dict[str, Any]]:
    """Inferences as the answer object; a slot answered twice raises (one value per attribute)."""
    out: dict[str, dict[str, Any]] = {}
    for i in inferences:
        if i.attribute in out:
            raise ValueError(f"'{i.attribute}' answered twice: one value per attribute")
        out[i.attribute] = i.model_dump(exclude={"attribute"})
    return {s: out[s] for s in ANY_SLOT if s in out}


# -- conditions ---------------------------------------------------------------------------------

ATTACKERS: dict[str, str] = {
    "text": "localbench.benchmarks.sopri.attackers:TextLLM",
    "post": "localbench.benchmarks.sopri.attackers:PostVLM",
    "selfdisc": "localbench.benchmarks.sopri.attackers:SelfDisc",
    "single": "localbench.benchmarks.sopri.attackers:SingleAgent",
    "holmeseye": "localbench.benchmarks.sopri.holmeseye:HolmesEye",
    "abductive": "localbench.benchmarks.sopri.abductive.attacker:AbductiveAttacker",
    "oracle": "localbench.benchmarks.sopri.reference:OracleAttacker",
    "none": "localbench.benchmarks.sopri.reference:NoneAttacker",
    "majority": "localbench.benchmarks.sopri.reference:MajorityAttacker",
}
"""attacker name → "module:Class" (imported when a simulation needs it)."""

PAPER_NAMES: dict[str, str] = {
    "text-only": "text",
    "post-wise-vlm": "post",
    "single-agent": "single",
    "self-disclosure": "selfdisc",
    "holmeseye-adapted": "holmeseye",
}
"""The paper's five baselines by its names (one script each in the release's ``baselines/``) → the
attacker that implements each here. Either name is accepted; the run records localbench's."""

ABLATIONS: dict[str, str] = {
    "perceiver": "without the perceiver: no first skim of every post into raw evidence",
    "hypothesizer": "without the hypothesizer: no candidate hypotheses, evidence is projected directly",
    "investigator": "without the investigator: no tool routes, hypotheses are checked on the evidence at hand",
    "verifier": "without the verifier: every hypothesis is admitted unchecked",
    "graph": "without the graph: evidence is a flat list, no support edges, no suspension",
}
"""abductive ablation flag → what the variant leaves out (``abductive-no-<flag>``)."""

DEFENSES: dict[str, str] = {
    "sanitized": "the posts rewritten by the sanitizer to lower exposure while keeping each post's social intent",
}

REFERENCE = ("oracle", "none", "majority")
"""Reference attackers (``reference``): no model; they check the scoring (ceiling, zero, guessing floor)."""

ATTACKER_ORDER: tuple[str, ...] = ("single", "text", "post", "selfdisc", "holmeseye", "abductive",
                                   *(f"abductive-no-{f}" for f in ABLATIONS), *REFERENCE)
"""Display order; the first is the baseline the others are compared with (paired bootstrap)."""


class ConditionError(ValueError):
    pass


@dataclass(frozen=True)
class Condition:
    """A parsed condition value: ``<attacker>[-no-<flag>…][+<defense>]``."""

    attacker: str
    without: tuple[str, ...] = ()  # ablation flags switched off
    defense: str | None = None

    @classmethod
    def parse(cls, value: str) -> "Condition":
        head, plus, defense = value.partition("+")
        if plus and defense not in DEFENSES:
            raise ConditionError(f"unknown defense '{defense}' in '{value}' (defenses: {', '.join(DEFENSES)})")
        name, *flags = head.split("-no-")
        name = PAPER_NAMES.get(name, name)
        if name not in ATTACKERS:
            raise ConditionError(f"unknown attacker '{name}' in '{value}' (attackers: {', '.join(ATTACKERS)}; "
                                 f"ablations: abductive-no-<{'|'.join(ABLATIONS)}>; defense: +sanitized)")
        if flags and name != "abductive":
            raise ConditionError(f"'{value}': only the abductive attacker has ablations")
        bad = [f for f in flags if f not in ABLATIONS]
        if bad:
            raise ConditionError(f"unknown ablation '{bad[0]}' in '{value}' (ablations: {', '.join(ABLATIONS)})")
        return cls(name, tuple(flags), defense or None)

    def enabled(self, flag: str) -> bool:
        return flag not in self.without


@dataclass
class AttackContext:
    """What an attacker works with on one user: the posts (sanitized under the defense), the
    sandbox tools, the simulation's calls and log, and how to derive a request seed."""

    user: "User"
    condition: Condition
    toolbox: "Toolbox"
    calls: "SimulationCalls"
    log: "ConversationLog"
    seed: Callable[..., int]  # seed(*parts): derived from the run seed, user, condition and seed index
    key: str  # the simulation key (request tags)
    vision: bool  # the attacker model takes images; otherwise images are given as OCR text + alt text
    max_inferences: int = MAX_INFERENCES
    budget: int = 20  # route budget B (the paper: 20): total tool cost it may spend
    settings: dict[str, Any] = field(default_factory=dict)  # extra knobs from spec.extra


@dataclass
class AttackResult:
    """An attacker's final profile and anything it wants recorded (graph, budget spent)."""

    inferences: list[Inference]  # one per slot at most (``answer_of`` checks it when recorded)
    termination: str = "answered"  # answered | no_answer | context_exhausted | budget
    payload: dict[str, Any] = field(default_factory=dict)


class Attacker(Protocol):
    name: str

    async def attack(self, ctx: AttackContext) -> AttackResult: ...


def attacker_for(condition: Condition) -> Attacker:
    return resolve_name(ATTACKERS[condition.attacker])()
