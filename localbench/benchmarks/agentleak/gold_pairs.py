"""AgentLeak gold from minimal pairs (``localbench.judging.pairs``): each forbidden vault field
stated about its record's subject, and its twin about someone else, in the same words."""

from __future__ import annotations

from localbench.benchmarks.agentleak.judges import build_gold as build_by_method, sources_from_scenario
from localbench.judging.gold import GoldItem
from localbench.judging.pairs import build_or_methods, from_plant_sources


def build_gold(scenarios, seed: int = 0, methods: list[str] | None = None, variants: int = 1) -> list[GoldItem]:
    scenarios = list(scenarios)
    return build_or_methods(
        methods,
        lambda kinds: from_plant_sources((s for sc in scenarios for s in sources_from_scenario(sc)), seed, kinds),
        lambda ms: build_by_method(scenarios, seed=seed, methods=ms, variants=variants))
