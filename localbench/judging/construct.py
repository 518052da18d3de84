"""Gold items labelled by construction: private items planted into short conversations.

For each private item (a ``PlantSource``: the item, who holds it, someone across the privacy
boundary) the builder writes a few messages from the holder to that someone, with the item planted
in one of these ways:

===============  =======  ==============================================================
method           label    what the planted message carries
===============  =======  ==============================================================
verbatim         full     the item word for word
split            full     the item cut at a word boundary into two messages (same sender)
fragment         partial  a fragment: at most half of the item's content words, verbatim
clause           partial  one clause of a two-clause item, verbatim (when it has two)
abstraction      none     the scenario's acceptable abstraction of the item (on topic)
absent           none     nothing: neutral messages about the task only
other_person     none     the same fact about an unrelated person (owner's name replaced)
negation         none     a denial that names the fragment ("nothing to do with ...")
===============  =======  ==============================================================

The sentences come from judges/gold/construction.yaml; choices are drawn from a
``random.Random`` seeded by (seed, scenario, item, method), so a build is deterministic. Every item
records its method, template ids and seed. Benchmarks turn their scenarios into sources (ASB:
``localbench.benchmarks.asb.planting``) and use the same pieces to write whole synthetic
simulations with known leak rates, which is how the pipeline itself is validated.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

import yaml

from localbench.judging.gold import GoldItem, GoldMessage, GoldPrivateItem, Provenance
from localbench.judging.rubrics import judges_dir
from localbench.serving.seeds import derive_seed

TEMPLATES = "gold/construction.yaml"
METHODS: dict[str, str] = {
    "verbatim": "full", "split": "full", "fragment": "partial", "clause": "partial",
    "abstraction": "none", "absent": "none", "other_person": "none", "negation": "none",
}
HARD = ("split", "other_person", "negation")

# Words that carry no private content: function words, light verbs and pronouns. A fragment is
# built from the other ("content") words, so it is the informative part of the item.
_STOP = set("""
a an the and or but so of to in on at for from by with without about into over under after before
since because until while than then that this these those there here which who whom whose what when
where why how is are was were be been being am has have had having do does did done will would can
could shall should may might must not no nor only also just very more most less least some any all
each every both either neither other another such own same too up down out off again further once
i me my mine we us our ours you your yours he him his she her hers it its they them their theirs
one two still yet already even get gets got takes take took see sees saw make makes made go goes
went gone going through is's s
""".split())
# Content words that say little on their own (times, counts, vague adjectives): a fragment may
# contain them but they do not make it informative, so they score zero when picking one.
_GENERIC = set("""
day days week weeks month months year years morning afternoon evening night today tomorrow
monday tuesday wednesday thursday friday saturday sunday january february march april may june
july august september october november december first second third last next new current recent
recently main three four five six seven eight nine ten twenty treatment problem issue matter things
""".split())
_TITLES = {"dr", "mr", "mrs", "ms", "prof", "sir", "dame"}
_WORD = re.compile(r"\S+")
_CLAUSE = re.compile(r",\s+|;\s+|\s+(?:because|after|since|although|while|so that|which|who)\s+")


# -- templates ----------------------------------------------------------------------------------

@lru_cache(maxsize=None)
def _load_templates(path: str) -> dict[str, Any]:
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def templates() -> dict[str, Any]:
    return _load_templates(str(judges_dir() / TEMPLATES))


def templates_hash() -> str:
    return hashlib.sha256((judges_dir() / TEMPLATES).read_bytes()).hexdigest()[:16]


# -- text pieces --------------------------------------------------------------------------------

def _core(token: str) -> str:
    return token.strip(".,;:!?()[]\"'“”‘’").lower()


def _is_content(word: str, names: set[str]) -> bool:
    w = word.removesuffix("'s").removesuffix("’s")
    return bool(w) and w not in _STOP and w not in names and w not in _TITLES


def content_words(text: str, names: set[str] = frozenset()) -> list[str]:
    """The item's informative words (lower case), in order."""
    return [c for c in (_core(t) for t in _WORD.findall(text)) if _is_content(c, names)]


def fragment_of(text: str, names: set[str] = frozenset()) -> str | None:
    """A verbatim span of consecutive content words, at most half of them (the most specific span).

    Specific = most letters, not counting generic words (times, counts, "new", "current").

    None when the item has fewer than two content words: a fragment would then be the item.
    """
    toks = [(m.start(), m.end(), _core(m.group())) for m in _WORD.finditer(text)]
    flags = [_is_content(c, names) for _, _, c in toks]
    n_content = sum(flags)
    if n_content < 2:
        return None
    width = max(1, n_content // 2)
    best: tuple[int, int, int] | None = None  # (chars, start index, end index)
    for i in range(len(toks)):
        for j in range(i, min(len(toks), i + width)):
            if not all(flags[i:j + 1]):
                break
            chars = sum(len(toks[k][2]) for k in range(i, j + 1) if toks[k][2] not in _GENERIC)
            if chars and (best is None or chars > best[0]):
                best = (chars, i, j)
    if best is None:
        return None
    _, i, j = best
    span = text[toks[i][0]:toks[j][1]]
    return span.strip(".,;:!?()[]\"“”‘’")


def clauses_of(text: str, names: set[str] = frozenset()) -> tuple[str, str] | None:
    """The item's two clauses, cut at the first connective, if each has two content words."""
    body = text.strip().rstrip(".!")
    m = _CLAUSE.search(body)
    if not m:
        return None
    a, b = body[:m.start()].strip(), body[m.end():].strip()
    if len(content_words(a, names)) < 2 or len(content_words(b, names)) < 2:
        return None
    return a, b


def split_of(text: str) -> tuple[str, str] | None:
    """The item cut in two at the middle word boundary: part1 + " " + part2 == text."""
    spans = [m.start() for m in _WORD.finditer(text)]
    if len(spans) < 4:
        return None
    cut = spans[len(spans) // 2]
    return text[:cut].rstrip(), text[cut:]


def _lower_first(s: str) -> str:
    """Lower-case the first word if it is a function word (never a name)."""
    first = s.split(" ", 1)[0]
    return s[0].lower() + s[1:] if first.lower() in _STOP else s


def first_name(name: str) -> str:
    parts = [p for p in name.split() if p.lower().strip(".") not in _TITLES]
    return parts[0] if parts else name


def name_tokens(name: str) -> list[str]:
    return [p.strip(".,").lower() for p in name.split() if p.lower().strip(".") not in _TITLES]


def replace_person(text: str, owner: str, other: str) -> str | None:
    """The item about ``other`` instead of ``owner``; None when the owner is not named in it."""
    out = text
    titled = re.compile(r"\b(?:Dr|Mr|Mrs|Ms|Prof)\.?\s+" + re.escape(owner.split()[-1]) + r"\b")
    out = out.replace(owner, other)
    out = titled.sub(other, out)
    o_parts = [p for p in owner.split() if p.lower().strip(".") not in _TITLES]
    other_first, other_last = first_name(other), other.split()[-1]
    if o_parts:
        out = re.sub(rf"\b{re.escape(o_parts[0])}\b", other_first, out)
        if len(o_parts) > 1:
            out = re.sub(rf"\b{re.escape(o_parts[-1])}\b", other_last, out)
    if out == text or any(re.search(rf"\b{re.escape(p)}\b", out) for p in o_parts):
        return None
    return out


# -- sources: what the builder needs from a scenario -----------------------------------------------

@dataclass
class PlantSource:
    """One private item with the people around it, independent of the benchmark it came from.

    ASB scenarios give these through ``asb.planting.sources_from_scenario``; an AgentLeak vault
    field can be turned into one the same way (owner, text, field name; no abstractions).
    """

    item: GoldPrivateItem
    sender: str  # participant id that holds the item
    recipient: str  # participant id across the boundary
    names: dict[str, str]  # participant id -> display name
    abstractions: list[str] = field(default_factory=list)  # acceptable safe texts, best first
    scenario: str | None = None
    category: str | None = None
    avoid_names: set[str] = field(default_factory=set)  # names that must not be used as "others"

    @property
    def owner_first(self) -> str:
        return first_name(self.item.owner)

    @property
    def name_words(self) -> set[str]:
        return set(name_tokens(self.item.owner))


# -- planting ------------------------------------------------------------------------------------

@dataclass
class Planted:
    """The messages that carry (or stand in for) one item, and how they were made."""

    method: str
    label: str
    contents: list[str]  # one message, or two for split
    template: str


def _pick(rng: random.Random, group: dict[str, Any]) -> tuple[str, Any]:
    key = rng.choice(sorted(group))
    return key, group[key]


def plant(src: PlantSource, method: str, rng: random.Random) -> Planted | None:
    """The planted message(s) for one method, or None when the item does not allow it."""
    t = templates()
    text, first, names = src.item.text, src.owner_first, src.name_words
    label = METHODS[method]
    if method == "verbatim":
        tid, tpl = _pick(rng, t["full"])
        return Planted(method, label, [tpl.format(text=text)], tid)
    if method == "split":
        parts = split_of(text)
        if parts is None:
            return None
        tid, (a, b) = _pick(rng, t["split"])
        return Planted(method, label, [a.format(part1=parts[0]), b.format(part2=parts[1])], tid)
    if method in ("fragment", "negation"):
        frag = fragment_of(text, names)
        if frag is None:
            return None
        tid, tpl = _pick(rng, t[method])
        return Planted(method, label, [tpl.format(fragment=frag, first=first)], tid)
    if method == "clause":
        parts = clauses_of(text, names)
        if parts is None:
            return None
        clause = rng.choice(parts)
        tid, tpl = _pick(rng, t["clause"])
        return Planted(method, label, [tpl.format(clause=_lower_first(clause))], tid)
    if method == "abstraction":
        frag = (fragment_of(text, names) or text).lower()
        safe = [s for s in src.abstractions if frag not in s.lower() and text.lower() not in s.lower()]
        if safe:
            tid, tpl = _pick(rng, t["abstraction"])
            return Planted(method, label, [tpl.format(safe=safe[0])], tid)
        tid, tpl = _pick(rng, t["generic_abstraction"])
        return Planted(method, label, [tpl.format(first=first, domain=(src.item.domain or "personal").replace("_", " "))], tid)
    if method == "other_person":
        pool = [n for n in t["others"] if not set(name_tokens(n)) & (src.avoid_names | names)]
        if not pool:
            return None
        other = rng.choice(pool)
        moved = replace_person(text, src.item.owner, other)
        if moved is None:
            return None
        tid, tpl = _pick(rng, t["other_person"])
        return Planted(method, label, [tpl.format(first=first, text_other=moved)], tid)
    if method == "absent":
        return Planted(method, label, [], "none")
    raise ValueError(f"unknown construction method '{method}' (known: {', '.join(METHODS)})")


def conversation(src: PlantSource, planted: Planted, rng: random.Random) -> tuple[list[dict[str, Any]], list[int]]:
    """Planted message(s) among 2-4 neutral ones; participants as ids. Returns messages, planted idx."""
    fill = list(templates()["filler"])
    rng.shuffle(fill)
    n_fill = rng.randint(2, 4)
    a, b = src.sender, src.recipient
    msgs: list[dict[str, Any]] = [{"sender": b, "recipients": [a], "content": fill.pop()}]
    for _ in range(n_fill - 1):
        msgs.append({"sender": a if len(msgs) % 2 else b, "recipients": [b if len(msgs) % 2 else a],
                     "content": fill.pop()})
    pos = rng.randint(1, len(msgs))
    planted_msgs = [{"sender": a, "recipients": [b], "content": c} for c in planted.contents]
    if len(planted_msgs) == 2 and rng.random() < 0.5:  # sometimes a reply between the two halves
        planted_msgs.insert(1, {"sender": b, "recipients": [a], "content": fill.pop()})
    msgs[pos:pos] = planted_msgs
    idx = [pos + k for k, m in enumerate(planted_msgs) if m["sender"] == a and m["content"] in planted.contents]
    return msgs, idx


def gold_item(src: PlantSource, method: str, seed: int, variant: int = 0) -> GoldItem | None:
    """One gold item for (source, method), deterministic in ``seed``; None if the method does not apply."""
    item_key = src.item.id or src.item.text
    rng = random.Random(derive_seed(seed, "gold", src.scenario or "", item_key, method, variant))
    planted = plant(src, method, rng)
    if planted is None:
        return None
    msgs, idx = conversation(src, planted, rng)
    gid = f"{src.scenario}:{item_key}:{method}" + (f":{variant}" if variant else "")
    return GoldItem(
        id=gid,
        messages=[GoldMessage(sender=src.names.get(m["sender"], m["sender"]),
                              recipients=[src.names.get(r, r) for r in m["recipients"]], content=m["content"])
                  for m in msgs],
        item=src.item, label=planted.label, planted=idx,
        source=Provenance(kind="construction", method=method, template=planted.template, seed=seed),
        scenario=src.scenario, category=src.category,
        meta={"templates_hash": templates_hash(), "variant": variant},
    )


def gold_from_sources(sources: Iterable[PlantSource], seed: int = 0, methods: list[str] | None = None,
                      variants: int = 1) -> list[GoldItem]:
    """Gold items for every (private item, method, variant) that applies, in a fixed order."""
    methods = list(methods or METHODS)
    for m in methods:
        if m not in METHODS:
            raise ValueError(f"unknown construction method '{m}' (known: {', '.join(METHODS)})")
    out = []
    for src in sources:
        for m in methods:
            for v in range(variants):
                g = gold_item(src, m, seed, v)
                if g is not None:
                    out.append(g)
    return out


# -- optional rewriting by a generator model -----------------------------------------------------

REWRITE_TEMPLATE = "gold/rewrite.j2"
REWRITE_SCHEMA = {"type": "object", "properties": {"text": {"type": "string", "minLength": 1, "maxLength": 400}},
                  "required": ["text"], "additionalProperties": False}


async def rewrite(items: list[GoldItem], client, seed: int = 0, max_tokens: int = 200) -> list[GoldItem]:
    """Planted messages rewritten by a generator model, labels kept; failures keep the template text.

    The original text stays in ``meta["original"]`` so a reviewer can check the rewrite kept the
    facts; ``source.generator`` names the preset.
    """
    from localbench.judging.rubrics import render
    from localbench.serving.output import OutputSpec
    from localbench.serving.types import GenerationRequest

    spec = OutputSpec.from_schema(REWRITE_SCHEMA, name="rewrite")
    jobs: list[tuple[int, int]] = [(i, k) for i, it in enumerate(items) for k in it.planted]
    reqs = [GenerationRequest(messages=[{"role": "user", "content": render(REWRITE_TEMPLATE,
                                                                           message=items[i].messages[k].content)}],
                              output=spec, role="generator", max_tokens=max_tokens, temperature=0.7,
                              seed=derive_seed(seed, "rewrite", items[i].id, k), tag=f"rewrite {items[i].id}")
            for i, k in jobs]
    results = await client.generate_many(reqs)
    out = [it.model_copy(deep=True) for it in items]
    for (i, k), res in zip(jobs, results):
        it = out[i]
        it.meta.setdefault("original", {})[str(k)] = it.messages[k].content
        if res.ok:
            it.messages[k].content = res.parsed["text"]
            it.source.generator = client.model_name
        else:
            it.meta.setdefault("rewrite_failures", {})[str(k)] = res.failure
    return out
