"""ASB's private items as gold-set sources, and synthetic runs with known leak rates.

``localbench.judging.construct`` plants a private item into a short conversation; this module
says, for an AgentSocialBench scenario, which items there are, who holds each, who across the
privacy boundary must not learn it and which acceptable abstractions it has. ``plant_run`` writes
whole dyadic simulations from planted conversations, so a judge and the metric code can be checked
against leak rates known by construction (``localbench judges plant-run``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localbench.benchmarks.asb.boundaries import forbidden_recipients, person_of, side_of
from localbench.benchmarks.asb.scenario import Scenario
from localbench.judging.construct import (
    METHODS,
    PlantSource,
    content_words,
    conversation,
    first_name,
    gold_from_sources,
    name_tokens,
    plant,
    templates_hash,
)
from localbench.judging.gold import GoldItem, GoldPrivateItem
from localbench.runlog import Judgment, LogEntry, Transcript
from localbench.serving.seeds import derive_seed


# -- sources: what the gold builder needs from a scenario ------------------------------------------

def participant_name(scenario: Scenario, pid: str) -> str:
    """How a participant is shown to the judge: a person's name, or "<first name>'s <domain> agent"."""
    for p in scenario.people:
        if p.id == pid:
            return p.name
    for a in scenario.agents:
        if a.id == pid:
            owner = first_name(scenario.person(a.user).name)
            dom = "" if a.domain in ("general", "") else a.domain.replace("_", " ") + " "
            return f"{owner}'s {dom}agent"
    return pid


def _counterpart(scenario: Scenario, item) -> str | None:
    """Someone the item must not reach: another side's agent (or a simulated person)."""
    holder_side = side_of(scenario, item.holder)
    if not scenario.is_dyadic:
        banned = forbidden_recipients(scenario, item)
        for a in scenario.agents:
            if a.user in banned and a.id != item.holder:
                return a.id
        return None
    for a in scenario.agents:
        if a.id != item.holder and side_of(scenario, a.id) not in (None, holder_side):
            if scenario.category == "CU" and person_of(scenario, a.id) == item.owner:
                continue
            return a.id
    for p in scenario.people:
        if p.simulated and side_of(scenario, p.id) != holder_side:
            return p.id
    return None


def _rank_abstractions(scenario: Scenario, item) -> list[str]:
    """The owner's abstractions ordered by word overlap with the item (overlap > 0 only)."""
    def stems(s: str) -> set[str]:
        return {w[:5] for w in content_words(s)}

    target = stems(item.text)
    scored = [(len(stems(a.raw) & target), n, a.safe) for n, a in enumerate(scenario.abstractions)
              if a.owner == item.owner]
    return [safe for score, _, safe in sorted(scored, key=lambda t: (-t[0], t[1])) if score > 0]


def sources_from_scenario(scenario: Scenario) -> list[PlantSource]:
    out = []
    names = {p.id: participant_name(scenario, p.id) for p in scenario.people}
    names |= {a.id: participant_name(scenario, a.id) for a in scenario.agents}
    avoid = {t for p in scenario.people for t in name_tokens(p.name)}
    for it in scenario.items:
        other = _counterpart(scenario, it)
        if other is None:
            continue
        owner = scenario.person(it.owner).name
        out.append(PlantSource(
            item=GoldPrivateItem(owner=owner, text=it.text, id=it.id, domain=it.domain),
            sender=it.holder, recipient=other, names=names, abstractions=_rank_abstractions(scenario, it),
            scenario=scenario.id, category=scenario.category, avoid_names=avoid))
    return out


def build_gold(scenarios: list[Scenario], seed: int = 0, methods: list[str] | None = None,
               variants: int = 1) -> list[GoldItem]:
    """Gold items for every (private item, method, variant) of these scenarios that applies, in a fixed order."""
    return gold_from_sources((src for sc in scenarios for src in sources_from_scenario(sc)), seed, methods, variants)


# -- synthetic runs with known leak rates (pipeline validation) -----------------------------------

PLANTABLE = ("CD", "MC", "CU")


@dataclass
class PlantedRun:
    """Transcript records (as runs/<id>/transcripts.jsonl holds them) and the planted labels."""

    transcripts: list[Transcript]
    labels: dict[str, dict[str, str]]  # transcript key -> item id -> construction label


def plant_run(scenarios: list[Scenario], model: str = "planted", seed: int = 0,
              leak_share: float = 0.5, level: str = "L0") -> PlantedRun:
    """One synthetic simulation per dyadic scenario: each item planted by a random method.

    ``leak_share`` is the chance an item is planted with a leaking method (full or partial), so
    runs with different shares have known, different leak rates. Every planted message crosses
    the boundary (holder → counterpart), so the benchmark's own judge calls see it.
    """
    leaking = [m for m, lv in METHODS.items() if lv != "none"]
    safe = [m for m, lv in METHODS.items() if lv == "none"]
    transcripts, labels = [], {}
    for sc in scenarios:
        if sc.category not in PLANTABLE:
            continue
        key = f"{sc.id}|{level}|0"
        rng = random.Random(derive_seed(seed, "plant_run", model, sc.id))
        msgs: list[dict[str, Any]] = []
        planted_labels: dict[str, str] = {}
        for src in sources_from_scenario(sc):
            pool = leaking if rng.random() < leak_share else safe
            for method in rng.sample(pool, len(pool)):
                p = plant(src, method, rng)
                if p is not None:
                    break
            assert p is not None  # "absent" always applies
            conv, _ = conversation(src, p, rng)
            msgs += conv
            planted_labels[src.item.id or ""] = p.label
        entries = [LogEntry(index=i, round=i, kind="message", sender=m["sender"], recipients=m["recipients"],
                            channel="direct", content=m["content"]) for i, m in enumerate(msgs)]
        transcripts.append(Transcript(key=key, scenario=sc.id, category=sc.category, level=level, model=model,
                                      entries=entries, termination="planted", payload={"planted": planted_labels}))
        labels[key] = planted_labels
    return PlantedRun(transcripts, labels)


def write_planted_run(run_dir: str | Path, scenarios_source: str, models: dict[str, float],
                      seed: int = 0, judge: str = "planted-oracle", categories: list[str] | None = None) -> Path:
    """A run directory (spec.yaml + transcripts.jsonl) whose leak rates are known, one model per share."""
    from localbench.benchmarks.asb.loaders import load_scenarios
    from localbench.runlog import RunDir
    from localbench.spec import RunSpec

    cats = categories or list(PLANTABLE)
    scenarios = load_scenarios(scenarios_source, cats).scenarios
    rd = RunDir(run_dir)
    spec = RunSpec(scenarios=scenarios_source, categories=cats, levels=["L0"],
                   models={"agent": next(iter(models)), "judge": judge}, out=str(Path(run_dir).parent),
                   run_id=Path(run_dir).name, extra={"planted": models},
                   seed=seed)  # the run's seed is the plant seed: a synthetic judge's flips derive from it
    rd.write_spec(spec, {"planted": {"seed": seed, "leak_share": models, "templates_hash": templates_hash()}},
                  {"planted_seed": str(seed)})
    store = rd.transcripts()
    for model, share in models.items():
        run = plant_run(scenarios, model=model, seed=seed, leak_share=share)
        for t in run.transcripts:
            store.append(t.model_copy(update={"key": f"{model}|{t.key}"}))
    return rd.path


PLANTED = "planted (truth)"  # the judge name a planted run's construction labels go by


def planted_judgments(transcripts: list[Transcript]) -> list[Judgment]:
    """For a synthetic run, its construction labels as privacy-judge records.

    They go through the same metric code as any judge's, so every judge can be compared with
    the truth; ordinary runs have no such labels and get an empty list.
    """
    out = []
    for t in transcripts:
        if "planted" in t.payload:
            out.append(Judgment(key=f"{t.key}|privacy|all", sim_key=t.key, judge="privacy", target="all",
                                label={"levels": t.payload["planted"], "evidence": {}}))
    return out
