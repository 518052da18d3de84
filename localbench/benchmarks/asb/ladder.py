"""The privacy instruction ladder: which privacy guidance an agent's system prompt carries.

The paper's sweep is L0 unconstrained, L1 explicit, L2 full defense. Each level is a set of
prompt components (template files under prompts/, one per component), so that every level adds
text and removes none:

    L0 unconstrained  (no privacy guidance at all)
    L1 explicit       rules + abstractions
    L2 full_defense   rules + abstractions + domain_boundary + abstraction_templates + minimal_information

The released code's other modes are available by name: ``implicit`` (one line asking for
judgment), ``enhanced`` (L1 + domain_boundary) and ``zdd`` (zero-disclosure default: share only
an authorized list). The released code's alternative numbering (L1 implicit ... L4 full defense)
is never used: "L3" and "L4" are rejected with an explanation, so a level label always means the
same thing. Components apply identically in the dyadic and the graph engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from localbench.benchmarks.asb.boundaries import blocked_tiers, tier_towards
from localbench.benchmarks.asb.scenario import TIERS, Scenario, Tier
from localbench.errors import UserError

COMPONENTS = ("implicit", "rules", "abstractions", "domain_boundary", "abstraction_templates",
              "minimal_information", "zdd")
"""Prompt components in the order they appear in a system prompt."""

MARKERS: dict[str, str] = {
    "implicit": "## Discretion",
    "rules": "## Privacy rules",
    "abstractions": "## Acceptable abstractions",
    "domain_boundary": "## Domain boundaries",
    "abstraction_templates": "## Abstraction templates",
    "minimal_information": "## Minimal information",
    "zdd": "## Zero-disclosure default",
}
"""The heading each component's template starts with: how tests and readers find it in a prompt."""


class LevelError(UserError, ValueError):
    """An unknown privacy level name."""


@dataclass(frozen=True)
class Level:
    """A privacy level: its label (used in keys and tables), its mode name and its components."""

    label: str
    mode: str
    components: tuple[str, ...]
    description: str

    def has(self, component: str) -> bool:
        return component in self.components


_LEVELS: tuple[Level, ...] = (
    Level("L0", "unconstrained", (), "no privacy guidance at all"),
    Level("L1", "explicit", ("rules", "abstractions"), "explicit rules and acceptable abstractions"),
    Level("L2", "full_defense",
          ("rules", "abstractions", "domain_boundary", "abstraction_templates", "minimal_information"),
          "L1 + domain-boundary prompting + abstraction templates + minimal-information principle"),
    Level("implicit", "implicit", ("implicit",), "one sentence asking for professional judgment"),
    Level("enhanced", "enhanced", ("rules", "abstractions", "domain_boundary"),
          "L1 + domain-boundary prompting"),
    Level("zdd", "zdd", ("zdd",), "zero-disclosure default: share only the authorized list"),
)
LEVELS: dict[str, Level] = {lv.label: lv for lv in _LEVELS}
_ALIASES: dict[str, str] = {lv.mode: lv.label for lv in _LEVELS}
DEFAULT_SWEEP = ("L0", "L1", "L2")


def resolve_level(name: str) -> Level:
    """A level by label (L0, L1, L2, implicit, enhanced, zdd) or mode name (explicit, ...)."""
    key = name.strip()
    if key.upper() in ("L0", "L1", "L2"):
        key = key.upper()
    key = _ALIASES.get(key.lower(), key)
    if key in LEVELS:
        return LEVELS[key]
    if key.upper() in ("L3", "L4"):
        raise LevelError(
            f"privacy level '{name}': localbench uses the paper's ladder L0 unconstrained, L1 explicit, "
            "L2 full_defense; the released code's L3/L4 numbering is not used. Name other modes "
            "directly: implicit, enhanced, zdd"
        )
    known = ", ".join(list(LEVELS) + [m for m in _ALIASES if _ALIASES[m] != m])
    raise LevelError(f"unknown privacy level '{name}': choose from {known}")


def resolve_levels(names: Iterable[str]) -> list[Level]:
    out: list[Level] = []
    for n in names:
        lv = resolve_level(n)
        if lv not in out:
            out.append(lv)
    return out


# -- what each component says about one agent --------------------------------------------------
def _dedupe(xs: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(x for x in xs if x))


def privacy_context(scenario: Scenario, agent_id: str) -> dict:
    """The scenario facts the privacy components show one agent (all levels get the same data;
    a level only decides which components are rendered).

    - rules: the agent's own prohibitions plus the private items it holds (falling back to its
      principal's items); in AM, one rule per tier with the people in that tier, resolved through
      the social graph (the released code never resolved these names: its tiers were empty);
    - abstractions: those for its principal and for anyone whose item it holds;
    - zdd: the authorized list is what it may share plus the safe wordings, never the raw phrases.
    """
    agent = scenario.agent(agent_id)
    person = agent.user
    held = [it for it in scenario.items if it.holder == agent_id]
    own = [it for it in scenario.items if it.owner == person]
    must = _dedupe([*agent.must_not_share, *(it.text for it in held)]) or _dedupe(it.text for it in own)
    tiers = None
    if scenario.category == "AM":
        scoped = held or own
        tiers = []
        for t in TIERS:
            members = [f"{p.name} ({', '.join(a.id for a in scenario.agents_of(p.id)) or p.id})"
                       for p in scenario.people if p.id != person and tier_towards(scenario, person, p.id) == t]
            items = _dedupe(it.text for it in scoped if t in blocked_tiers(it))
            tiers.append({"tier": t, "members": members, "secrets": items})
    owners = {person} | {it.owner for it in held}
    abstractions = [a for a in scenario.abstractions if a.owner in owners]
    return {
        "rules": {"must_not_share": must, "may_share": _dedupe(agent.should_share), "tiers": tiers},
        "abstractions": [{"raw": a.raw, "safe": a.safe} for a in abstractions],
        "authorized": _dedupe([*agent.should_share, *(a.safe for a in abstractions)]),
    }


# -- affinity tiers (AM) -----------------------------------------------------------------------
def most_restrictive(tiers: Iterable[Tier]) -> Tier:
    """The least trusted tier among several: what a message to all of them must respect."""
    ranks = [TIERS.index(t) for t in tiers]
    return TIERS[max(ranks)] if ranks else TIERS[-1]


def effective_tier(scenario: Scenario, sender_person: str, recipient_people: Iterable[str]) -> Tier:
    """The tier that governs one message: the most restrictive among its recipients' tiers."""
    people = [p for p in dict.fromkeys(recipient_people) if p != sender_person]
    return most_restrictive(tier_towards(scenario, sender_person, p) for p in people) if people else TIERS[0]
