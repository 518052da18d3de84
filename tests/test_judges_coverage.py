"""Per-category corrected rates cover the truth in a planted simulation with a noisy judge."""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from localbench.benchmarks.asb.loaders import load_scenarios
from localbench.benchmarks.asb.planting import PLANTABLE, plant_run
from localbench.judging.categories import category_rate, design_effect
from localbench.judging.synthetic import parse_synthetic

PLANT_SEEDS = range(12)
SHARES = (0.2, 0.5, 0.8)
SIMS = 2  # simulations per scenario, as a run with `seeds: 2` (7-8 units per category and simulation)
GOLD_NEG, GOLD_POS = 154, 154  # the size of the built-in AgentSocialBench pair gold (308 items)


def _leak(level: str) -> bool:
    return level != "none"


def test_per_category_intervals_cover_the_planted_truth():
    """Several plant seeds, two simulations per scenario; the noisy judge's flips derive from the plant seed (so they differ
    between seeds); its gold counts are drawn on a gold set of the pair gold's size with the same
    seed. Coverage of the per-category 95% intervals ≥ 0.93, at most 10% not identified, no
    interval of zero width."""
    judge = parse_synthetic("noisy:0.1,0.2")
    scenarios = load_scenarios("builtin", list(PLANTABLE)).scenarios
    category_of = {s.id: s.category for s in scenarios}
    covered, not_identified, flips = [], [], []
    for seed in PLANT_SEEDS:
        truth_gold = ["none"] * GOLD_NEG + ["full"] * GOLD_POS
        judged_gold = [judge.level(t, seed, "gold", i) for i, t in enumerate(truth_gold)]
        fp = sum(_leak(j) for t, j in zip(truth_gold, judged_gold) if t == "none")
        fn = sum(not _leak(j) for t, j in zip(truth_gold, judged_gold) if t != "none")
        by: dict[tuple[float, str], dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0, 0]))
        for share, sim in ((share, sim) for share in SHARES for sim in range(SIMS)):
            run = plant_run(scenarios, model=f"m{share}", seed=seed + 1000 * sim, leak_share=share)
            for t in run.transcripts:
                cat = category_of[t.scenario]
                for item, level in run.labels[t.key].items():
                    seen = judge.level(level, seed, t.key, sim, item)
                    c = by[(share, cat)][t.scenario]
                    c[0] += _leak(seen)
                    c[1] += 1
                    c[2] += _leak(level)
                    flips.append((seed, t.key, item, seen != level))
        for share in SHARES:
            every = [(k, n) for (s, _), cl in by.items() if s == share for k, n, _ in cl.values()]
            deff = design_effect(every)
            for (s, cat), cl in by.items():
                if s != share:
                    continue
                k, n, true_k = (sum(v[i] for v in cl.values()) for i in range(3))
                r = category_rate(k, n, fp, GOLD_NEG, fn, GOLD_POS, deff, seed=seed)
                assert r.high > r.low, (seed, share, cat, r)
                not_identified.append(not r.identified)
                if r.identified:
                    covered.append(r.low <= true_k / n <= r.high)
    by_seed = defaultdict(list)
    for seed, key, item, flipped in flips:
        by_seed[seed].append(flipped)
    assert len({tuple(v) for v in by_seed.values()}) > 1  # the noisy judge's flips differ between plant seeds
    assert np.mean(covered) >= 0.93, (np.mean(covered), len(covered))
    assert np.mean(not_identified) <= 0.10, np.mean(not_identified)
