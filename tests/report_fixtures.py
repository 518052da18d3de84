"""A realistic fake ASB run directory for report, notebook and metrics-consumer tests.

`make_run_dir(path)` writes spec.yaml (through RunDir, so versions are real), scenario_scores.jsonl
(one line per simulation, synthetic values) and scores.json aggregated from those lines by the
real score stage (localbench.benchmarks.asb.scoring: bootstrap CIs, paired tests). The data has
the paper's shape: leakage falls from L0 to L2 while the full/partial split shifts toward partial
(the abstraction paradox); some judge calls fail (n_failed > 0, None values); IAS is sometimes
undefined (no message touched private data); one model has no MC data at the last level.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

from localbench.benchmarks.asb.metrics import HEADLINE
from localbench.runlog import RunDir
from localbench.scores import Scores
from localbench.spec import RunSpec

MODELS = ("qwen3-8b", "llama-3.1-8b", "smollm2-135m")
LEVELS = ("L0", "L1", "L2")
CATEGORIES = ("CD", "MC", "CU", "GC", "HS", "CM", "AM")
DOMAIN_PAIRS = ("health→social", "finance→schedule", "social→professional", "health→lifestyle",
                "professional→finance", "schedule→health")
BEHAVIOURS = ("oversharing", "cross_referencing", "implicit_disclosure", "unnecessary_context",  # negative
              "appropriate_abstraction", "minimal_disclosure", "deflection", "boundary_maintenance")  # positive
JUDGE = "qwen3-8b"


def _round_items(x: float, n_items: int) -> float:
    return round(max(0.0, min(1.0, x)) * n_items) / n_items


def _simulate(rng: random.Random, model_i: int, level_i: int, cat: str) -> dict[str, float | None]:
    """One simulation's metric values, shaped like the paper's results."""
    base = 0.55 - 0.12 * level_i + 0.08 * model_i
    leak = _round_items(base + rng.gauss(0, 0.15), 5)
    full_share = max(0.1, 0.8 - 0.3 * level_i + rng.gauss(0, 0.1))  # abstraction shifts leaks to partial
    full = _round_items(leak * full_share, 10)
    m: dict[str, float | None] = {}
    name = HEADLINE[cat]
    if cat == "AM":
        m["ACS"] = 1.0 - leak
    else:
        m[name], m[f"{name}_full"], m[f"{name}_partial"] = leak, full, round(leak - full, 6)
    if cat == "CU":
        other = _round_items(leak + rng.gauss(0, 0.2), 5)
        m["CULR"] = (leak + other) / 2
        m["CULR_worst"] = max(leak, other)
    if cat == "CM":
        cer = _round_items(base * 0.6 + rng.gauss(0, 0.1), 5)
        m["CER"], m["CER_full"], m["CER_partial"] = cer, _round_items(cer * full_share, 10), None
        m["CER_partial"] = round(cer - m["CER_full"], 6)
    m["IAS"] = None if rng.random() < 0.1 else rng.choice((0.0, 0.5, 1.0) if rng.random() < 0.5 + 0.2 * level_i else (1.0,))
    m["TCQ"] = rng.choice((0.0, 0.25, 0.5, 0.75, 1.0)[max(0, 1 - model_i):5 - model_i])
    m["Task%"] = 100.0 if rng.random() < 0.75 - 0.2 * model_i - 0.05 * level_i else 0.0
    neg = [rng.random() < leak * 0.7 for _ in BEHAVIOURS[:4]]
    pos = [rng.random() < 0.2 + 0.2 * level_i for _ in BEHAVIOURS[4:]]
    m["NEG"], m["POS"] = float(sum(neg)), float(sum(pos))
    for b, v in zip(BEHAVIOURS, neg + pos):
        m[f"B:{b}"] = float(v)
    return m


def make_scenario_lines(models=MODELS, levels=LEVELS, categories=CATEGORIES, per_category: int = 6,
                        seeds: int = 2, fail_rate: float = 0.04, seed: int = 7,
                        drop: tuple[tuple[str, str, str], ...] | None = None, judge: str = JUDGE) -> list[dict]:
    """scenario_scores.jsonl lines. ``drop`` lists (model, level, category) whose every leak judgment failed."""
    rng = random.Random(seed)
    if drop is None:
        drop = ((models[-1], levels[-1], "MC"),) if "MC" in categories else ()
    lines = []
    for mi, model in enumerate(models):
        for li, level in enumerate(levels):
            for cat in categories:
                for k in range(per_category if cat != "CD" else 2 * per_category):
                    scen = f"{cat}_{k:03d}"
                    for s in range(seeds):
                        metrics = _simulate(rng, mi, li, cat)
                        failed: list[str] = []
                        leak = [n for n in metrics if n.split("_")[0] in (HEADLINE[cat], "CER", "CULR")]
                        if (model, level, cat) in drop or rng.random() < fail_rate:
                            failed = leak
                            for n in leak:
                                metrics[n] = None
                        lines.append({
                            "key": f"{model}|{level}|{scen}|{s}", "scenario": scen, "category": cat,
                            "level": level, "seed_index": s, "model": model, "judge": judge,
                            "domain_pair": DOMAIN_PAIRS[k % len(DOMAIN_PAIRS)] if cat == "CD" else None,
                            "metrics": metrics, "failed": failed,
                        })
    return lines


def aggregate(lines: list[dict], run_id: str) -> Scores:
    """scores.json from the lines, by the real score stage (bootstrap CIs, paired tests), per judge."""
    from localbench.benchmarks.asb.design import DESIGN
    from localbench.runlog import ScenarioScore
    from localbench.scoring import aggregate as score

    judges = list(dict.fromkeys(ln["judge"] for ln in lines))
    parts = [score([ScenarioScore.model_validate(ln) for ln in lines if ln["judge"] == j], DESIGN, run_id, judge=j)
             for j in judges]
    scores = parts[0]
    for extra in parts[1:]:
        scores.rows += extra.rows  # comparisons: the first judge's only
    scores.failures = {f"privacy ({j})": sum(len(ln["failed"]) > 0 for ln in lines if ln["judge"] == j) for j in judges}
    scores.failures["task"] = 0
    scores.notes.append("fixture run: synthetic values shaped like the paper's results")
    return scores


def make_run_dir(path: str | Path, *, models=MODELS, levels=LEVELS, categories=CATEGORIES, per_category: int = 6,
                 seeds: int = 2, with_scenarios: bool = True, with_spec: bool = True, seed: int = 7,
                 judges: tuple[str, ...] = (JUDGE,)) -> Path:
    """Write a complete fake run directory at ``path`` and return it (one set of judgments per judge)."""
    p = Path(path)
    lines = [ln for i, j in enumerate(judges)
             for ln in make_scenario_lines(models, levels, categories, per_category, seeds, seed=seed + i, judge=j)]
    rd = RunDir(p)
    if with_spec:
        spec = {"benchmark": "asb", "scenarios": "builtin", "categories": list(categories), "conditions": list(levels),
                "limit": per_category, "seeds": seeds, "seed": 0,
                "models": {"agent": models[0], "user_sim": None, "judge": judges[0]}}
        provenance = {
            "models": {m: {"repo": f"example/{m}", "revision": hashlib.sha1(m.encode()).hexdigest()[:12]} for m in models},
            "hashes": {"prompts/agent_L0.j2": "3f2a9c0d11e4b5a7", "judges/leakage.j2": "9be01c55d2a87f34",
                       "schemas/leak_label.json": "0c4d5e6f7a8b9c0d"},
            "structured_output": {"backend": "xgrammar", "version": "0.2.8"},
        }
        rd.write_spec(RunSpec.model_validate(spec), provenance)
    if with_scenarios:
        with (p / "scenario_scores.jsonl").open("w", encoding="utf-8") as f:
            for ln in lines:
                f.write(json.dumps(ln, ensure_ascii=False) + "\n")
    aggregate(lines, run_id=p.name).write(p / "scores.json")
    return p


if __name__ == "__main__":  # python tests/report_fixtures.py OUT_DIR — a run to look at by hand
    import sys

    print(make_run_dir(sys.argv[1] if len(sys.argv) > 1 else "runs/asb-fixture"))
