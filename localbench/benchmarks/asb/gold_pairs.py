"""AgentSocialBench gold from minimal pairs (``localbench.judging.pairs``): each private item
stated about its owner, and its twin about someone else, in the same words."""

from __future__ import annotations

from localbench.benchmarks.asb.planting import build_gold as build_by_method, sources_from_scenario
from localbench.judging.gold import GoldItem
from localbench.judging.pairs import scenario_pair_gold


def build_gold(scenarios, seed: int = 0, methods: list[str] | None = None, variants: int = 1) -> list[GoldItem]:
    return scenario_pair_gold(scenarios, sources_from_scenario, build_by_method, seed, methods, variants)
