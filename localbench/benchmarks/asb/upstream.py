"""Convert AgentSocialBench's released scenario JSON into the normalized Scenario model.

The release has two schemas (dyadic CD/MC/CU with ``user_profiles``/``agents``/``humans``, and
multi-party GC/HS/CM/AM with ``participants``/``social_graph``) and several quirks that this module
resolves instead of inheriting (docs/fidelity.md, "Data", says how each one is handled):

- social-graph edges name people by lower-case first name while participants carry full names
  (upstream bug B1: never resolved there); here every edge is resolved to a person id, or the file
  is rejected;
- CU keys each user's privacy boundary by lower-case first name;
- embedded profiles label sensitivity in several shapes; profiles stay opaque, and a per-domain
  label is derived for ``Person.sensitivity``;
- AM's ``must_not_cross`` is a dict of nested per-tier lists; an item's ``blocked_tiers`` are the
  tiers whose list contains it;
- HS/CM coordinators hold other people's secrets; the owner is read from the text where a
  participant is named, else the holder is recorded as owner with a warning.

Item ids are ``<owner>.<n>``, numbered in file order (participants' own items before those a
coordinator holds), so they are stable across loads.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, NoReturn

from pydantic import ValidationError

from localbench.benchmarks.asb.issues import LoadIssue, ScenarioError
from localbench.benchmarks.asb.scenario import (
    TIERS,
    Abstraction,
    Agent,
    Category,
    Edge,
    Person,
    PrivateItem,
    Scenario,
    SuccessCriteria,
)

UPSTREAM_CATEGORIES: dict[str, Category] = {
    "cross_domain": "CD", "mediated_comm": "MC", "cross_user": "CU", "multi_party_group": "GC",
    "hub_and_spoke": "HS", "competitive": "CM", "affinity_modulated": "AM",
}
_TITLES = {"dr", "mr", "mrs", "ms", "mx", "prof", "sir", "dame", "rev"}
_SUBTYPE_KEY = {"MC": "mediation_type", "CU": "interaction_type"}


def looks_upstream(data: Any) -> bool:
    """An upstream file is a JSON object with a ``scenario_id`` (the normalized format uses ``id``)."""
    return isinstance(data, dict) and "scenario_id" in data


# -- names ---------------------------------------------------------------------------------------
def fold(text: str) -> str:
    """Strip accents so that 'jose' in an edge finds 'José'."""
    return "".join(ch for ch in unicodedata.normalize("NFKD", text) if not unicodedata.combining(ch))


def slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "_", fold(text).lower()).strip("_")
    return s or "x"


def name_tokens(full_name: str) -> list[str]:
    """The words of a name without honorifics ('Dr. Mara Quint' -> ['Mara', 'Quint'])."""
    toks = full_name.split()
    kept = [t for t in toks if t.lower().rstrip(".") not in _TITLES]
    return kept or toks


def without_note(name: str) -> str:
    """A name without a trailing parenthetical: 'Miguel Alvarez (age 29, PhD Candidate (CS))' ->
    'Miguel Alvarez'. The note repeats the profile's demographics; kept, it became part of the
    person's id and made the last word of their name 'CS))'."""
    if not name.rstrip().endswith(")"):
        return name
    depth = 0
    for i in range(len(name.rstrip()) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0:
            return name[:i].rstrip() or name
    return name


def _norm_key(text: str) -> str:
    return " ".join(fold(text).lower().replace("_", " ").replace(".", " ").split())


# -- sensitivity -----------------------------------------------------------------------------------
def _is_label(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def domain_sensitivity(profile: dict[str, Any]) -> tuple[dict[str, int], list[tuple[str, Any]]]:
    """Per-domain sensitivity of an embedded profile, and the labels that are not integers 1-5.

    A domain-level ``sensitivity`` wins where it exists. Otherwise the domain takes the highest
    attribute-level label, whichever upstream shape carries it (``_attribute_labels``).
    ``demographics`` holds ages, not labels.
    """
    out: dict[str, int] = {}
    bad: list[tuple[str, Any]] = []
    for dom, attrs in profile.items():
        if dom in ("name", "demographics") or not isinstance(attrs, dict):
            continue
        if "sensitivity" in attrs:
            v = attrs["sensitivity"]
            if _is_label(v) and 1 <= v <= 5:
                out[dom] = v
            else:
                bad.append((f"{dom}.sensitivity", v))
            continue
        labels: list[int] = []
        for key, a in attrs.items():
            for where, v in _attribute_labels(a, f"{dom}.{key}"):
                if _is_label(v) and 1 <= v <= 5:
                    labels.append(v)
                else:
                    bad.append((where, v))
        if labels:
            out[dom] = max(labels)
    return out, bad


def _attribute_labels(a: Any, where: str, top: bool = True) -> list[tuple[str, Any]]:
    """The sensitivity labels one profile attribute carries, with where each sits.

    At the top: ``{value…, sensitivity: n}``, ``{fact text: n}`` or a bare ``n``. Deeper (a dict
    of sub-facts, or a list of them, each with its own ``sensitivity``) only explicit
    ``sensitivity`` keys count, since other numbers there are amounts, not labels.
    """
    if isinstance(a, dict):
        if "sensitivity" in a:
            return [(f"{where}.sensitivity", a["sensitivity"])]
        if top and a and all(_is_label(x) for x in a.values()):
            return [(f"{where}.{k}", x) for k, x in a.items()]
        return [lab for k, x in a.items() for lab in _attribute_labels(x, f"{where}.{k}", top=False)]
    if isinstance(a, list):
        return [lab for i, x in enumerate(a) for lab in _attribute_labels(x, f"{where}[{i}]", top=False)]
    return [(where, a)] if top and _is_label(a) else []


# -- conversion context ----------------------------------------------------------------------------
@dataclass
class _Ctx:
    file: str
    issues: list[LoadIssue] = field(default_factory=list)

    def warn(self, where: str, msg: str) -> None:
        self.issues.append(LoadIssue(self.file, where, msg))

    def fail(self, where: str | None, msg: str) -> NoReturn:
        raise ScenarioError(self.file, where, msg)

    def get(self, d: dict[str, Any], key: str, typ: type | tuple[type, ...], where: str,
            default: Any = ...) -> Any:
        path = f"{where}.{key}" if where else key
        if key not in d or d[key] is None:
            if default is ...:
                self.fail(path, "missing required field")
            return default
        v = d[key]
        if not isinstance(v, typ) or (isinstance(v, bool) and typ is not bool):
            names = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
            self.fail(path, f"expected {_jsonish(names)}, got {_jsonish(type(v).__name__)}")
        return v

    def str_list(self, d: dict[str, Any], key: str, where: str, required: bool = False) -> list[str]:
        path = f"{where}.{key}" if where else key
        v = self.get(d, key, list, where, ... if required else [])
        for i, x in enumerate(v):
            if not isinstance(x, str):
                self.fail(f"{path}[{i}]", f"expected a string, got {_jsonish(type(x).__name__)}")
        return [x.strip() for x in v if x.strip()]

    def str_map(self, d: dict[str, Any], key: str, where: str) -> dict[str, str]:
        path = f"{where}.{key}" if where else key
        v = self.get(d, key, dict, where, {})
        for k, x in v.items():
            if not isinstance(x, str):
                self.fail(f"{path}.{k}", f"expected a string, got {_jsonish(type(x).__name__)}")
        return v


def _jsonish(pyname: str) -> str:
    return {"dict": "an object", "list": "a list", "str": "a string", "int": "an integer",
            "float": "a number", "bool": "a boolean", "NoneType": "null"}.get(pyname, pyname)


class _People:
    """Person ids and the aliases (first names, agent names, surnames) that resolve to them."""

    def __init__(self, ctx: _Ctx):
        self.ctx = ctx
        self.people: list[Person] = []
        self._by_name: dict[str, str] = {}
        self._aliases: dict[str, set[str]] = {}

    def add(self, name: str, where: str, *, extra_aliases: tuple[str, ...] = (), **fields: Any) -> Person:
        raw_name, name = name, without_note(name)
        key = _norm_key(name)
        if key in self._by_name:
            self.ctx.warn(where, f"'{name}' is listed twice; the first entry is used")
            return self.get(self._by_name[key])
        base = slug(" ".join(name_tokens(name)))
        pid, n = base, 2
        while any(p.id == pid for p in self.people):
            pid, n = f"{base}_{n}", n + 1
        if pid != base:
            self.ctx.warn(where, f"two people share the id '{base}'; this one is '{pid}'")
        p = Person(id=pid, name=name, **fields)
        self.people.append(p)
        self._by_name[key] = pid
        toks = name_tokens(name)
        aliases = {_norm_key(name), _norm_key(" ".join(toks)), _norm_key(toks[-1]), pid.replace("_", " ")}
        aliases |= {_norm_key(" ".join(toks[:k])) for k in range(1, len(toks) + 1)}
        aliases |= {_norm_key(a) for a in (*extra_aliases, raw_name) if a}
        for a in aliases:
            self._aliases.setdefault(a, set()).add(pid)
        return p

    def get(self, pid: str) -> Person:
        return next(p for p in self.people if p.id == pid)

    def by_name(self, name: str) -> str | None:
        return self._by_name.get(_norm_key(name))

    def resolve(self, ref: str) -> str | None:
        """The one person a short reference (first name, agent stem, surname) can mean, if any."""
        key = _norm_key(ref)
        if key in self._by_name:
            return self._by_name[key]
        hits = self._aliases.get(key, set())
        return next(iter(hits)) if len(hits) == 1 else None

    def mention_patterns(self) -> list[tuple[str, re.Pattern[str]]]:
        """Per person, a pattern for the names by which the text may mention them (unique ones)."""
        counts = Counter()
        per: dict[str, set[str]] = {}
        for p in self.people:
            toks = name_tokens(p.name)
            forms = {fold(" ".join(toks)), fold(toks[0]), fold(toks[-1])}
            per[p.id] = forms
            counts.update(forms)
        out = []
        for p in self.people:
            forms = sorted((f for f in per[p.id] if counts[f] == 1 and len(f) > 1), key=len, reverse=True)
            if forms:
                out.append((p.id, re.compile(r"\b(?:" + "|".join(re.escape(f) for f in forms) + r")\b")))
        return out


def _owner_from_text(text: str, patterns: list[tuple[str, re.Pattern[str]]]) -> str | None:
    """The participant named first in an item ('Jonah's debt…' belongs to Jonah), if any."""
    best: tuple[int, str] | None = None
    t = fold(text)
    for pid, pat in patterns:
        m = pat.search(t)
        if m and (best is None or m.start() < best[0]):
            best = (m.start(), pid)
    return best[1] if best else None


_LEAD_IN = re.compile(r"(?i)(?:that|the fact that|details (?:about|of)|information about)\s+")
_ABOUT_THEM = re.compile(r"(?:['\u2019]s?\b|\s+(?:is|has|was|had|does|did)\b)")


def _subject_of(text: str, patterns: list[tuple[str, re.Pattern[str]]]) -> str | None:
    """The participant an item is about when its text opens with them: "Kyle's PTSD diagnosis",
    "That Priya is undergoing…", "Details about Derek's proposal plans…". Narrow on purpose: "Her
    worry that Jun is not stable enough" names Jun but is the owner's secret, kept from Jun too."""
    t = fold(text).strip()
    lead = _LEAD_IN.match(t)
    t = t[lead.end():] if lead else t
    for pid, pat in patterns:
        m = pat.match(t)
        if m and _ABOUT_THEM.match(t, m.end()):
            return pid
    return None


# -- shared pieces ---------------------------------------------------------------------------------
def _success(ctx: _Ctx, d: dict[str, Any]) -> SuccessCriteria:
    sc = ctx.get(d, "success_criteria", dict, "")
    return SuccessCriteria(
        task_completed=ctx.get(sc, "task_completed", str, "success_criteria"),
        privacy_preserved=ctx.get(sc, "privacy_preserved", str, "success_criteria", ""),
    )


def _profile(raw: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in raw.items() if k != "name"}


def _sensitivity(ctx: _Ctx, profile: dict[str, Any], where: str) -> dict[str, int]:
    """Per-domain labels; a label that is not an integer 1-5 rejects the file (every upstream
    file uses integers 1-5, so anything else is a broken file, not a shape to skip)."""
    labels, bad = domain_sensitivity(profile)
    for path, v in bad:
        ctx.fail(f"{where}.{path}", f"sensitivity must be an integer from 1 to 5, got {v!r}")
    return labels


@dataclass
class _ItemDraft:
    owner: str
    holder: str
    text: str
    where: str
    domain: str | None = None
    sensitivity: int | None = None
    blocked_tiers: list[str] | None = None
    about: str | None = None


def _number_items(drafts: list[_ItemDraft]) -> list[PrivateItem]:
    """Give items ids ``<owner>.<n>`` (1-based, in the order given)."""
    counter: Counter[str] = Counter()
    items = []
    for d in drafts:
        counter[d.owner] += 1
        items.append(PrivateItem(id=f"{d.owner}.{counter[d.owner]}", text=d.text, owner=d.owner,
                                 holder=d.holder, domain=d.domain, sensitivity=d.sensitivity,
                                 blocked_tiers=d.blocked_tiers, about=d.about))  # type: ignore[arg-type]
    return items


def _unique_agent_id(ctx: _Ctx, raw: str, taken: set[str], where: str) -> str:
    base = slug(raw)
    aid, n = base, 2
    while aid in taken:
        aid, n = f"{base}_{n}", n + 1
    if aid != base:
        ctx.warn(where, f"agent id '{base}' is used twice; this one is '{aid}'")
    taken.add(aid)
    return aid


def _agent_lists(ctx: _Ctx, a: dict[str, Any], where: str) -> dict[str, list[str]]:
    return {k: ctx.str_list(a, k, where) for k in ("knows", "should_share", "must_not_share")}


# -- dyadic (CD, MC, CU) ---------------------------------------------------------------------------
def _dyadic(ctx: _Ctx, d: dict[str, Any], cat: Category) -> dict[str, Any]:
    people = _People(ctx)
    profiles = ctx.get(d, "user_profiles", list, "")
    humans_raw = ctx.get(d, "humans", list, "", [])
    agents_raw = ctx.get(d, "agents", list, "")
    if not agents_raw:
        ctx.fail("agents", "at least one agent is required")
    if not profiles:
        ctx.fail("user_profiles", "at least one user profile is required")
    pb = ctx.get(d, "privacy_boundary", dict, "")
    meta = ctx.get(d, "metadata", dict, "", {})

    human_names: dict[str, int] = {}
    for i, h in enumerate(humans_raw):
        if not isinstance(h, dict):
            ctx.fail(f"humans[{i}]", "expected an object")
        human_names[_norm_key(ctx.get(h, "name", str, f"humans[{i}]"))] = i

    for i, up in enumerate(profiles):
        where = f"user_profiles[{i}]"
        if not isinstance(up, dict):
            ctx.fail(where, "expected an object")
        name = ctx.get(up, "name", str, where)
        prof = _profile(up)
        fields: dict[str, Any] = {"profile": prof, "sensitivity": _sensitivity(ctx, prof, where)}
        hi = human_names.get(_norm_key(name))
        if hi is not None:
            fields.update(_human_fields(ctx, humans_raw[hi], f"humans[{hi}]"))
        people.add(name, where, **fields)
    for key, hi in human_names.items():
        h = humans_raw[hi]
        if people.by_name(h["name"]) is None:  # a simulated human without a profile
            people.add(h["name"], f"humans[{hi}]", **_human_fields(ctx, h, f"humans[{hi}]"))

    principals = [p for p in people.people if not p.simulated]
    if not principals:
        ctx.fail("user_profiles", "every user is a simulated human; no one for the agents to serve")

    # agents and whom they serve
    agents: list[Agent] = []
    taken: set[str] = set()
    for i, a in enumerate(agents_raw):
        where = f"agents[{i}]"
        if not isinstance(a, dict):
            ctx.fail(where, "expected an object")
        role = ctx.get(a, "role", str, where)
        user_ref = ctx.get(a, "user", str, where, None)
        if user_ref is not None:
            uid = people.by_name(user_ref) or people.resolve(user_ref)
            if uid is None:
                ctx.fail(f"{where}.user", f"'{user_ref}' is not one of the user_profiles")
        elif cat == "CU" and len(agents_raw) == len(principals):
            uid = principals[i].id
            ctx.warn(f"{where}.user", f"missing; paired with user_profiles by position ({uid})")
        else:
            uid = principals[0].id
        agents.append(Agent(id=_unique_agent_id(ctx, role, taken, where), user=uid,
                            domain=ctx.get(a, "domain", str, where, "general"), **_agent_lists(ctx, a, where)))

    drafts: list[_ItemDraft] = []
    abstractions: list[Abstraction] = []
    source_domain = target_domain = None
    if cat == "CU":
        for key, sub in pb.items():
            if key == "minimum_info_needed":
                continue
            where = f"privacy_boundary.{key}"
            if not isinstance(sub, dict):
                ctx.fail(where, f"expected an object, got {_jsonish(type(sub).__name__)}")
            pid = people.resolve(key)
            if pid is None or people.get(pid).simulated:
                ctx.warn(where, f"'{key}' names none of the users; its {len(sub.get('must_not_cross') or [])} "
                                "items are not loaded")
                continue
            holder = next((a.id for a in agents if a.user == pid), None)
            if holder is None:
                ctx.warn(where, f"no agent serves {pid}; its items are not loaded")
                continue
            for j, text in enumerate(ctx.str_list(sub, "must_not_cross", where)):
                drafts.append(_ItemDraft(pid, holder, text, f"{where}.must_not_cross[{j}]"))
            abstractions += [Abstraction(owner=pid, raw=r, safe=s)
                             for r, s in ctx.str_map(sub, "acceptable_abstractions", where).items()]
        if "must_not_cross" in pb:
            ctx.warn("privacy_boundary.must_not_cross", "a CU boundary is per user; the flat list is ignored")
    else:
        owner = principals[0].id
        if len(principals) > 1:
            ctx.warn("user_profiles", f"{len(principals)} unsimulated users in {cat}; items belong to {owner}")
        holder = agents[0].id
        if cat == "CD":
            source_domain = ctx.get(meta, "source_domain", str, "metadata", None)
            target_domain = ctx.get(meta, "target_domain", str, "metadata", None)
            if source_domain is None or target_domain is None:
                ctx.warn("metadata", "source_domain/target_domain missing; items held by the first agent")
            else:
                src = [a.id for a in agents if a.domain == source_domain]
                if src:
                    holder = src[0]
                else:
                    ctx.warn("metadata.source_domain", f"no agent has domain '{source_domain}'; "
                                                       f"items held by {holder}")
        sens = people.get(owner).sensitivity.get(source_domain) if source_domain else None
        for j, text in enumerate(ctx.str_list(pb, "must_not_cross", "privacy_boundary", required=True)):
            drafts.append(_ItemDraft(owner, holder, text, f"privacy_boundary.must_not_cross[{j}]",
                                     domain=source_domain, sensitivity=sens))
        abstractions += [Abstraction(owner=owner, raw=r, safe=s)
                         for r, s in ctx.str_map(pb, "acceptable_abstractions", "privacy_boundary").items()]
    if cat == "MC" and not any(p.simulated for p in people.people):
        ctx.fail("humans", "MC needs the other party as a simulated human")

    subtype = f"{source_domain}_{target_domain}" if cat == "CD" and source_domain and target_domain else \
        str(meta.get(_SUBTYPE_KEY.get(cat, ""), ""))
    return dict(people=people.people, agents=agents, items=_number_items(drafts), abstractions=abstractions,
                minimum_info_needed=ctx.str_list(pb, "minimum_info_needed", "privacy_boundary"),
                source_domain=source_domain, target_domain=target_domain, subtype=subtype, graph=[])


def _human_fields(ctx: _Ctx, h: dict[str, Any], where: str) -> dict[str, Any]:
    knowledge: dict[str, str] = {}
    for k, v in ctx.get(h, "knowledge", dict, where, {}).items():
        if isinstance(v, str):
            knowledge[k] = v
        else:
            knowledge[k] = json.dumps(v, ensure_ascii=False)
            ctx.warn(f"{where}.knowledge.{k}", "not a string; kept as its JSON text")
    return {"simulated": True, "persona": ctx.get(h, "persona", str, where, ""), "knowledge": knowledge}


# -- multi-party (GC, HS, CM, AM) ------------------------------------------------------------------
def _multi_party(ctx: _Ctx, d: dict[str, Any], cat: Category) -> dict[str, Any]:
    people = _People(ctx)
    parts = ctx.get(d, "participants", list, "")
    if len(parts) < 2:
        ctx.fail("participants", "a multi-party scenario needs at least two participants")
    meta = ctx.get(d, "metadata", dict, "", {})
    agents: list[Agent] = []
    taken: set[str] = set()
    for i, p in enumerate(parts):
        where = f"participants[{i}]"
        if not isinstance(p, dict):
            ctx.fail(where, "expected an object")
        name = ctx.get(p, "user_name", str, where)
        agent_name = ctx.get(p, "agent_name", str, where, None)
        stem = re.sub(r"_?agent$", "", agent_name) if agent_name else ""
        prof = ctx.get(p, "user_profile", dict, where, {})
        if people.by_name(name) is not None:
            ctx.fail(f"{where}.user_name", f"'{name}' appears twice among the participants")
        person = people.add(name, where, extra_aliases=(stem,), profile=_profile(prof),
                            sensitivity=_sensitivity(ctx, _profile(prof), f"{where}.user_profile"))
        role = ctx.get(p, "task_role", str, where, "participant")
        if role not in ("participant", "coordinator"):
            ctx.warn(f"{where}.task_role", f"unknown role '{role}'; treated as participant")
            role = "participant"
        aid = _unique_agent_id(ctx, agent_name or f"{person.id}_agent", taken, where)
        agents.append(Agent(id=aid, user=person.id, task_role=role,  # type: ignore[arg-type]
                            brief=ctx.get(p, "system_prompt_context", str, where, "")))

    patterns = people.mention_patterns()
    own: list[_ItemDraft] = []
    held: list[_ItemDraft] = []
    abstractions: list[Abstraction] = []
    from_holder: list[_ItemDraft] = []
    for i, p in enumerate(parts):
        where = f"participants[{i}].privacy_boundary"
        agent = agents[i]
        coordinator = agent.task_role == "coordinator"
        pb = ctx.get(p, "privacy_boundary", dict, f"participants[{i}]")
        for text, path, tiers in _boundary_items(ctx, pb, where, cat):
            owner = agent.user
            draft = _ItemDraft(owner, agent.id, text, path, blocked_tiers=tiers)
            if not coordinator and (about := _subject_of(text, patterns)) not in (None, owner):
                draft.about = about
            if coordinator:
                found = _owner_from_text(text, patterns)
                if found is None:
                    ctx.warn(path, f"names no participant; recorded the holder ({owner}) as owner")
                    from_holder.append(draft)
                else:
                    draft.owner = found
                held.append(draft)
            else:
                own.append(draft)
        for raw, safe in ctx.str_map(pb, "acceptable_abstractions", where).items():
            owner = agent.user
            if coordinator:
                owner = _owner_from_text(raw, patterns) or _owner_from_text(safe, patterns) or owner
            abstractions.append(Abstraction(owner=owner, raw=raw, safe=safe))

    items = _number_items(own + held)
    by_draft = dict(zip(map(id, own + held), items))
    graph = _graph(ctx, d, people)
    return dict(people=people.people, agents=agents, items=items, abstractions=abstractions, graph=graph,
                subtype=str(meta.get("sub_type", "")),
                _owner_from_holder=[by_draft[id(x)].id for x in from_holder])


def _boundary_items(ctx: _Ctx, pb: dict[str, Any], where: str,
                    cat: Category) -> list[tuple[str, str, list[str] | None]]:
    """(text, field path, blocked tiers) for each item of one participant's boundary."""
    path = f"{where}.must_not_cross"
    m = pb.get("must_not_cross")
    if m is None:
        ctx.fail(path, "missing required field")
    if isinstance(m, list):
        texts = ctx.str_list(pb, "must_not_cross", where)
        tiers = list(TIERS) if cat == "AM" else None
        if cat == "AM" and texts:
            ctx.warn(path, "AM boundary is a flat list, not by tier; each item blocked for every tier")
        return [(t, f"{path}[{j}]", tiers) for j, t in enumerate(texts)]
    if not isinstance(m, dict):
        ctx.fail(path, f"expected a list or an object by tier, got {_jsonish(type(m).__name__)}")
    order: list[str] = []
    first_path: dict[str, str] = {}
    blocked: dict[str, list[str]] = {}
    for tier, texts in m.items():
        if tier not in TIERS:
            ctx.warn(f"{path}.{tier}", f"unknown tier (expected one of {', '.join(TIERS)}); list ignored")
            continue
        for j, t in enumerate(ctx.str_list(m, tier, path)):
            if t not in blocked:
                order.append(t)
                blocked[t] = []
                first_path[t] = f"{path}.{tier}[{j}]"
            if tier not in blocked[t]:
                blocked[t].append(tier)
    out = []
    for t in order:
        tiers = sorted(blocked[t], key=TIERS.index)
        expected = list(TIERS[TIERS.index(tiers[0]):])
        if tiers != expected:
            ctx.warn(first_path[t], f"tier lists are not nested: blocked for {tiers}, not for all of "
                                    f"{expected}; kept as listed")
        out.append((t, first_path[t], tiers))
    return out


def _graph(ctx: _Ctx, d: dict[str, Any], people: _People) -> list[Edge]:
    sg = ctx.get(d, "social_graph", dict, "", None)
    if sg is None:
        ctx.warn("social_graph", "missing; no relationships are known")
        return []
    edges = []
    seen: set[tuple[str, str]] = set()
    for i, e in enumerate(ctx.get(sg, "edges", list, "social_graph")):
        where = f"social_graph.edges[{i}]"
        if not isinstance(e, dict):
            ctx.fail(where, "expected an object")
        ends = []
        for key in ("from", "to"):
            ref = ctx.get(e, key, str, where)
            pid = people.resolve(ref)
            if pid is None:
                ctx.fail(f"{where}.{key}", f"'{ref}' matches no participant "
                                           f"({', '.join(p.name for p in people.people)})")
            ends.append(pid)
        aff = ctx.get(e, "affinity", str, where)
        if aff not in TIERS:
            ctx.fail(f"{where}.affinity", f"'{aff}' is not one of {', '.join(TIERS)}")
        if tuple(ends) in seen:
            ctx.warn(where, f"second edge {ends[0]} -> {ends[1]}; the first one is used")
            continue
        seen.add((ends[0], ends[1]))
        edges.append(Edge(source=ends[0], target=ends[1], affinity=aff,  # type: ignore[arg-type]
                          context=ctx.get(e, "context", str, where, "")))
    n = len(people.people)
    missing = n * (n - 1) - len({s for s in seen if s[0] != s[1]})
    if missing:
        ctx.warn("social_graph.edges", f"{missing} ordered pairs of participants have no edge")
    return edges


# -- entry point -----------------------------------------------------------------------------------
def convert(data: Any, file: str) -> tuple[Scenario, list[LoadIssue]]:
    """One upstream scenario (parsed JSON) as a normalized Scenario, plus what could not be resolved."""
    ctx = _Ctx(str(file))
    if not isinstance(data, dict):
        ctx.fail(None, f"expected a JSON object, got {_jsonish(type(data).__name__)}")
    sid = ctx.get(data, "scenario_id", str, "")
    raw_cat = ctx.get(data, "category", str, "")
    cat = UPSTREAM_CATEGORIES.get(raw_cat)
    if cat is None:
        ctx.fail("category", f"'{raw_cat}' is not one of {', '.join(UPSTREAM_CATEGORIES)}")
    task = ctx.get(data, "task", str, "")
    success = _success(ctx, data)
    meta = dict(ctx.get(data, "metadata", dict, "", {}))
    body = _dyadic(ctx, data, cat) if cat in ("CD", "MC", "CU") else _multi_party(ctx, data, cat)
    from_holder = body.pop("_owner_from_holder", [])
    meta["format"] = "agentsocialbench"
    if from_holder:
        meta["owner_from_holder"] = from_holder
    try:
        sc = Scenario(id=sid, category=cat, task=task, success_criteria=success, source=str(file),
                      metadata=meta, **body)
    except ValidationError as e:  # a reference the steps above should have caught
        err = e.errors()[0]
        ctx.fail(".".join(str(x) for x in err["loc"]) or None, err["msg"])
    return sc, ctx.issues


# -- the paper's subset ----------------------------------------------------------------------------
# The paper reports 352 scenarios; the release has 372 and no manifest. The extra files are
# earlier generator runs, recognisable from metadata (docs/fidelity.md): CD keeps the one
# uninterrupted run that starts at this timestamp; GC, CM and AM keep the Opus batch of this day.
_PAPER_CD_FROM = "2026-03-04T18:25"
_PAPER_MP_DAY = "2026-03-21"
_PAPER_MP_GENERATOR = "claude-opus"


def in_paper_subset(sc: Scenario) -> bool:
    """Whether an upstream scenario belongs to the 352 the paper reports (inferred from metadata)."""
    m = sc.metadata
    if sc.category == "CD":
        return str(m.get("generation_timestamp", "")) >= _PAPER_CD_FROM
    if sc.category in ("GC", "CM", "AM"):
        return _PAPER_MP_GENERATOR in str(m.get("generated_by", "")) and \
            str(m.get("timestamp", "")).startswith(_PAPER_MP_DAY)
    return True
