"""Gold from minimal pairs: every leak item has a non-leak twin with the same surface.

A pair is one framing of judges/gold/pairs.yaml filled twice. The leak item states the private
fact about its owner and mentions someone else; its twin states the same fact about that someone
else and mentions the owner. Both carry the same words (names, value words, negation or
supposition), sit in the same conversation (same filler messages, same position, same length of
context), and differ only in whose fact is asserted. So no rule that counts words, finds the
value, or spots a negation can tell them apart; ``localbench.judging.cheaters`` checks that, and
``localbench.judging.cues`` that every surface cue has the same rate in both classes.

The fact comes in three forms (the leak *type*): verbatim (the item's own words, label full),
paraphrase (its key fact restated without its key words, full) and inference (clues that imply
it, partial), made by ``localbench.judging.construct``'s lexicon. Verbatim pairs are thinned so
that paraphrase and inference make up at least ``MIN_HARD_SHARE`` of the leak items where the
benchmark's items admit them.

Benchmarks give ``PairSource``s (their people and their private facts); ``gold_pairs.py`` in each
benchmark's folder turns its scenarios into sources, and SopriBench, whose items are guesses of a
value rather than messages about a person, fills the ``value`` framings itself (``value_pair``).
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from localbench.judging.construct import (first_name, inference_of, name_tokens, paraphrase_of, replace_person,
                                          templates, templates_hash)
from localbench.judging.gold import GoldItem, GoldMessage, GoldPrivateItem, Provenance
from localbench.judging.rubrics import judges_dir
from localbench.serving.seeds import derive_seed

PAIRS = "gold/pairs.yaml"
PAIR_METHODS: dict[str, str] = {"verbatim": "full", "paraphrase": "full", "inference": "partial"}
FRAMINGS = ("plain", "negation", "hypothetical", "refusal", "coarse")
MIN_HARD_SHARE = 1 / 3  # paraphrase + inference among the leak items
CONTEXT_FILLERS = 3  # every item shows this many filler messages and one planted message
_SLOT = "Zqxw"  # a stand-in name while a fact is moved from one person to another


def pair_templates() -> dict[str, Any]:
    import yaml

    return yaml.safe_load((judges_dir() / PAIRS).read_text(encoding="utf-8"))


def pairs_hash() -> str:
    h = hashlib.sha256((judges_dir() / PAIRS).read_bytes())
    h.update(templates_hash().encode())
    return h.hexdigest()[:16]


@dataclass
class PairSource:
    """One private fact and the people a pair needs."""

    item: GoldPrivateItem
    sender: str  # display name of who writes the planted message
    recipient: str  # display name of who receives it
    other: str  # someone else's first name: the person the twin's fact is about
    scenario: str
    category: str | None = None

    @property
    def owner_first(self) -> str:
        return first_name(self.item.owner)


def about(text: str, owner: str) -> Callable[[str], str] | None:
    """A function person -> the item's statement about that person (first names only, so the
    owner's and the other's versions differ in the name alone); None when it names nobody."""
    moved = replace_person(text, owner, _SLOT)
    if moved is None or _SLOT not in moved:
        return None
    return lambda person: moved.replace(_SLOT, person)


def facts(src: PairSource, rng: random.Random) -> dict[str, Callable[[str], str]]:
    """{leak type: person -> statement} for the forms this item admits."""
    out: dict[str, Callable[[str], str]] = {}
    base = about(src.item.text, src.item.owner)
    if base is None:
        return out
    out["verbatim"] = base
    slot_names = {_SLOT.lower()}
    para = paraphrase_of(base(_SLOT), slot_names, rng)
    if para and _SLOT in para:
        out["paraphrase"] = lambda person, p=para: p.replace(_SLOT, person)
    clue = inference_of(src.item.text, set(name_tokens(src.item.owner)), _SLOT, rng)
    if clue and _SLOT in clue:
        out["inference"] = lambda person, c=clue: c.replace(_SLOT, person)
    return out


def _fill_context(rng: random.Random, sender: str, recipient: str, planted: str) -> tuple[list[GoldMessage], int]:
    fill = list(templates()["filler"])
    rng.shuffle(fill)
    pos = rng.randint(1, CONTEXT_FILLERS)
    msgs = []
    for k in range(CONTEXT_FILLERS):
        a, b = (recipient, sender) if k % 2 == 0 else (sender, recipient)
        msgs.append(GoldMessage(sender=a, recipients=[b], content=fill[k]))
    msgs.insert(pos, GoldMessage(sender=sender, recipients=[recipient], content=planted))
    return msgs, pos


def _sentence(s: str) -> str:
    s = s.strip()
    return s if s.endswith((".", "!", "?")) else s + "."


def person_pair(src: PairSource, kind: str, fact: Callable[[str], str], seed: int) -> list[GoldItem]:
    """The leak item of one (source, leak type) and its twin: same framing, same conversation."""
    rng = random.Random(derive_seed(seed, "pair", src.scenario, src.item.id or src.item.text, kind))
    framing = rng.choice(FRAMINGS)
    tid, tpl = rng.choice(sorted(pair_templates()["person"][framing].items()))
    ctx_seed = rng.randrange(2**31)
    owner, other = src.owner_first, src.other
    domain = (src.item.domain or "personal").replace("_", " ")
    out = []
    for x, y, label in ((owner, other, PAIR_METHODS[kind]), (other, owner, "none")):
        planted = tpl.format(fact=_sentence(fact(x)), y=y, domain=domain)
        msgs, pos = _fill_context(random.Random(ctx_seed), src.sender, src.recipient, planted)
        out.append(_item(src.scenario, src.category, src.item, msgs, [pos], label, kind, framing, tid, seed,
                         about=x, other=y))
    return out


def value_pair(scenario: str, category: str | None, item: GoldPrivateItem, gid: Callable[[str], str], slot: str,
               true_value: str, other_value: str, label: str, kind: str, seed: int) -> list[GoldItem]:
    """A guess pair (SopriBench): the leak guesses ``true_value`` over ``other_value``, its twin the reverse."""
    rng = random.Random(derive_seed(seed, "pair", scenario, item.id or item.text, kind, other_value))
    framing = rng.choice(sorted(pair_templates()["value"]))
    tid, tpl = rng.choice(sorted(pair_templates()["value"][framing].items()))
    out = []
    for x, y, lab, suffix in ((true_value, other_value, label, "leak"), (other_value, true_value, "none", "twin")):
        msgs = [GoldMessage(sender="guess", content=tpl.format(slot=slot.replace("_", " "), x=x, y=y))]
        g = _item(scenario, category, item, msgs, [0], lab, kind, framing, tid, seed, about=x, other=y)
        out.append(g.model_copy(update={"id": gid(suffix)}))
    return out


def _item(scenario: str, category: str | None, item: GoldPrivateItem, msgs: list[GoldMessage], planted: list[int],
          label: str, kind: str, framing: str, tid: str, seed: int, about: str, other: str) -> GoldItem:
    side = "leak" if label != "none" else "twin"
    pair = f"{scenario}:{item.id or item.text}:{kind}"
    meta = {"pair": pair, "side": side, "framing": framing, "leak_type": kind, "about": about, "other": other,
            "pairs_hash": pairs_hash()}
    return GoldItem(id=f"{pair}:{side}", messages=msgs, item=item, label=label, planted=planted,  # type: ignore[arg-type]
                    source=Provenance(kind="construction", method=kind if side == "leak" else f"twin_{kind}",
                                      template=f"pairs/{tid}", seed=seed),
                    scenario=scenario, category=category, meta=meta)


def thin_verbatim(items: list[GoldItem], seed: int, share: float = MIN_HARD_SHARE) -> list[GoldItem]:
    """Drop whole verbatim pairs (seeded) until paraphrase + inference are ``share`` of the leaks."""
    hard = sum(1 for it in items if it.meta.get("side") == "leak" and it.meta.get("leak_type") != "verbatim")
    verb = sorted({it.meta["pair"] for it in items if it.meta.get("leak_type") == "verbatim"})
    keep_n = int(hard * (1 - share) / share) if hard else len(verb)
    if len(verb) <= keep_n:
        return items
    rng = random.Random(derive_seed(seed, "thin"))
    rng.shuffle(verb)
    drop = set(verb[keep_n:])
    return [it for it in items if it.meta.get("pair") not in drop]


def person_pairs(sources: Iterable[PairSource], seed: int = 0, kinds: list[str] | None = None) -> list[GoldItem]:
    """Every (source, leak type) pair the sources admit, verbatim pairs thinned (see the module docstring)."""
    kinds = list(kinds or PAIR_METHODS)
    bad = [k for k in kinds if k not in PAIR_METHODS]
    if bad:
        raise ValueError(f"unknown pair type '{bad[0]}' (minimal pairs are built as: {', '.join(PAIR_METHODS)})")
    out: list[GoldItem] = []
    for src in sources:
        rng = random.Random(derive_seed(seed, "facts", src.scenario, src.item.id or src.item.text))
        for kind, fact in facts(src, rng).items():
            if kind in kinds:
                out += person_pair(src, kind, fact, seed)
    return thin_verbatim(out, seed) if len(kinds) > 1 else out


def other_names(owners: Iterable[tuple[str, str]], seed: int = 0) -> Callable[[str, str], str]:
    """A picker of 'someone else' for a (scenario, owner): the first name of an owner from another
    scenario, so the other name is never a fixed list a cheater could learn (grouped by scenario,
    it has not seen that name at all)."""
    pool = sorted({(sc, first_name(o)) for sc, o in owners})

    def pick(scenario: str, owner: str) -> str:
        mine = set(name_tokens(owner))
        cands = [n for sc, n in pool if sc != scenario and n.lower() not in mine and re.fullmatch(r"[A-Z][a-z]+", n)]
        if not cands:
            cands = [first_name(n) for n in templates()["others"] if first_name(n).lower() not in mine]
        return random.Random(derive_seed(seed, "other", scenario, owner)).choice(sorted(set(cands)))

    return pick


def is_pair_gold(items: Iterable[GoldItem]) -> bool:
    items = list(items)
    return bool(items) and all("pair" in it.meta for it in items)



def from_plant_sources(plant_sources: Iterable[Any], seed: int = 0, kinds: list[str] | None = None) -> list[GoldItem]:
    """Minimal pairs from ``construct.PlantSource``s (what AgentSocialBench and AgentLeak already
    make of their scenarios): the holder writes to the one across the boundary; the other person
    is an owner from another scenario."""
    plant_sources = list(plant_sources)
    pick = other_names(((s.scenario or "", s.item.owner) for s in plant_sources), seed)
    pair_sources = [PairSource(item=s.item, sender=s.names.get(s.sender, s.sender),
                               recipient=s.names.get(s.recipient, s.recipient),
                               other=pick(s.scenario or "", s.item.owner), scenario=s.scenario or "",
                               category=s.category) for s in plant_sources]
    return person_pairs(pair_sources, seed, kinds)


def build_or_methods(kinds: list[str] | None, pairs: Callable[[list[str] | None], list[GoldItem]],
                     by_method: Callable[[list[str] | None], list[GoldItem]]) -> list[GoldItem]:
    """Minimal pairs by default (or for pair types only); the per-method construction of
    ``construct`` when other methods are asked (a study of one method, not a ranking set)."""
    if kinds is None or all(k in PAIR_METHODS for k in kinds):
        return pairs(kinds)
    return by_method(kinds)


def scenario_pair_gold(scenarios, sources_from_scenario: Callable[[Any], Iterable[Any]],
                       by_method: Callable[..., list[GoldItem]], seed: int = 0, methods: list[str] | None = None,
                       variants: int = 1) -> list[GoldItem]:
    """The gold of a benchmark whose scenarios give ``construct.PlantSource``s: minimal pairs by
    default, its per-method construction (``by_method``) when other methods are asked."""
    scenarios = list(scenarios)
    return build_or_methods(
        methods,
        lambda kinds: from_plant_sources((s for sc in scenarios for s in sources_from_scenario(sc)), seed, kinds),
        lambda ms: by_method(scenarios, seed=seed, methods=ms, variants=variants))
