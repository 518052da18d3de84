"""A realistic fake ASB run directory for report, notebook and metrics-consumer tests.

`make_run_dir(path)` writes spec.yaml (through RunDir, so versions are real), scenario_scores.jsonl
(one line per simulation) and scores.json aggregated from those lines with the real bootstrap and
paired tests of localbench.stats. The data has the paper's shape: leakage falls from L0 to L2
while the full/partial split shifts toward partial (the abstraction paradox); some judge calls
fail (n_failed > 0, None values); one model has no MC data at the last level (mean None).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
from collections import defaultdict
from pathlib import Path

from localbench.rundir import RunDir
from localbench.scores import PairedComparison, ScoreRow, Scores
from localbench.stats import bootstrap_ci, paired_bootstrap_test

MODELS = ("qwen3-8b", "llama-3.1-8b", "smollm2-135m")
LEVELS = ("L0", "L1", "L2")
CATEGORIES = ("CD", "MC", "CU", "GC", "HS", "CM", "AM")
HEADLINE = {"CD": "CDLR", "MC": "MLR", "CU": "CULR", "GC": "MPLR", "HS": "HALR", "CM": "CSLR", "AM": "ACS"}
DOMAIN_PAIRS = ("health→social", "finance→schedule", "social→professional", "health→lifestyle",
                "professional→finance", "schedule→health")
BEHAVIOURS = ("oversharing", "cross_referencing", "implicit_disclosure", "unnecessary_context",
              "appropriate_deflection", "abstraction", "minimal_disclosure", "consent_seeking")
HIGHER = {"ACS", "IAS", "TCQ", "Task%", "POS"} | {f"B:{b}" for b in BEHAVIOURS[4:]}
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
        for sfx in ("full", "partial"):
            m[f"CULR_worst_{sfx}"] = m[f"CULR_{sfx}"]
    if cat == "CM":
        cer = _round_items(base * 0.6 + rng.gauss(0, 0.1), 5)
        m["CER"], m["CER_full"], m["CER_partial"] = cer, _round_items(cer * full_share, 10), None
        m["CER_partial"] = round(cer - m["CER_full"], 6)
    m["IAS"] = rng.choice((0.0, 0.5, 1.0)) if rng.random() < 0.5 + 0.2 * level_i else 1.0
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
                        drop: tuple[tuple[str, str, str], ...] | None = None) -> list[dict]:
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
                            "level": level, "seed_index": s, "model": model, "judge": JUDGE,
                            "domain_pair": DOMAIN_PAIRS[k % len(DOMAIN_PAIRS)] if cat == "CD" else None,
                            "metrics": metrics, "failed": failed,
                        })
    return lines


def _per_scenario(lines: list[dict], metric: str) -> tuple[dict[str, float], int]:
    """Seed-averaged value per scenario, and how many scenarios had no value at all."""
    vals: dict[str, list[float]] = defaultdict(list)
    seen = set()
    for ln in lines:
        if metric not in ln["metrics"] and metric not in ln["failed"]:
            continue
        key = f"{ln['category']}/{ln['scenario']}"
        seen.add(key)
        v = ln["metrics"].get(metric)
        if v is not None:
            vals[key].append(v)
    return {k: sum(v) / len(v) for k, v in vals.items()}, len(seen) - len(vals)


def aggregate(lines: list[dict], run_id: str, n_resamples: int = 200, n_paired: int = 500) -> Scores:
    """scores.json from scenario lines: per (metric, model, level, category) plus ALL and CD groups."""
    boot = {"n_resamples": n_resamples, "confidence": 0.95, "seed": 0}
    by: dict[tuple, list[dict]] = defaultdict(list)
    for ln in lines:
        by[(ln["model"], ln["judge"], ln["level"], ln["category"], "")].append(ln)
        if ln["category"] == "CD":
            by[(ln["model"], ln["judge"], ln["level"], "CD", ln["domain_pair"])].append(ln)
    rows: list[ScoreRow] = []
    per_unit: dict[tuple, dict[str, float]] = {}

    def add(model, judge, level, cat, group, sel):
        names = dict.fromkeys(n for ln in sel for n in [*ln["metrics"], *ln["failed"]])
        for name in names:
            if cat == "ALL" and not (name in ("IAS", "TCQ", "Task%", "NEG", "POS") or name.startswith("B:")):
                continue
            if group and not name.startswith("CDLR"):
                continue
            vals, n_failed = _per_scenario(sel, name)
            ci = bootstrap_ci(list(vals.values()), n_resamples=n_resamples, seed=0)
            ok = ci.n > 0
            rows.append(ScoreRow(metric=name, model=model, judge=judge, level=level, category=cat, group=group,
                                 mean=ci.estimate if ok else None, ci_low=ci.low if ok else None,
                                 ci_high=ci.high if ok else None, n=ci.n, n_failed=n_failed,
                                 higher_is_better=name in HIGHER))
            if not group:
                per_unit[(name, model, level, cat)] = vals

    for (model, judge, level, cat, group), sel in by.items():
        add(model, judge, level, cat, group, sel)
    pooled: dict[tuple, list[dict]] = defaultdict(list)
    for ln in lines:
        pooled[(ln["model"], ln["judge"], ln["level"])].append(ln)
    for (model, judge, level), sel in pooled.items():
        add(model, judge, level, "ALL", "", sel)

    comps: list[PairedComparison] = []
    models = list(dict.fromkeys(ln["model"] for ln in lines))
    levels = list(dict.fromkeys(ln["level"] for ln in lines))
    cats = list(dict.fromkeys(ln["category"] for ln in lines))
    for model in models:
        for lv in levels[1:]:
            for cat in cats:
                metric = HEADLINE[cat]
                a = per_unit.get((metric, model, levels[0], cat), {})
                b = per_unit.get((metric, model, lv, cat), {})
                t = paired_bootstrap_test(b, a, n_resamples=n_paired, seed=0)  # diff = mean(b - a)
                fin = (lambda x: x if math.isfinite(x) else None)
                comps.append(PairedComparison(metric=metric, category=cat, a=levels[0], b=lv, fixed=model,
                                              diff=fin(t.diff), ci_low=fin(t.ci_low), ci_high=fin(t.ci_high),
                                              p_value=fin(t.p_value), n_pairs=t.n_pairs))
    n_failed_calls = sum(len(ln["failed"]) > 0 for ln in lines)
    return Scores(run_id=run_id, benchmark="asb", bootstrap=boot, rows=rows, comparisons=comps,
                  failures={f"leakage judge ({JUDGE})": n_failed_calls},
                  notes=["fixture run: synthetic values shaped like the paper's results"])


def make_run_dir(path: str | Path, *, models=MODELS, levels=LEVELS, categories=CATEGORIES, per_category: int = 6,
                 seeds: int = 2, with_scenarios: bool = True, with_spec: bool = True, seed: int = 7) -> Path:
    """Write a complete fake run directory at ``path`` and return it."""
    p = Path(path)
    lines = make_scenario_lines(models, levels, categories, per_category, seeds, seed=seed)
    rd = RunDir(p)
    if with_spec:
        spec = {"benchmark": "asb", "scenarios": "builtin", "categories": list(categories), "levels": list(levels),
                "limit": per_category, "seeds": seeds, "seed": 0,
                "models": {"agent": models[0], "user_sim": None, "judge": JUDGE}, "extra": {"agents": list(models)}}
        provenance = {
            "models": {m: {"repo": f"example/{m}", "revision": hashlib.sha1(m.encode()).hexdigest()[:12]} for m in models},
            "hashes": {"prompts/agent_L0.j2": "3f2a9c0d11e4b5a7", "judges/leakage.j2": "9be01c55d2a87f34",
                       "schemas/leak_label.json": "0c4d5e6f7a8b9c0d"},
            "structured_output": {"backend": "xgrammar", "version": "0.2.8"},
        }
        rd.write_spec(spec, provenance)
    if with_scenarios:
        with (p / "scenario_scores.jsonl").open("w", encoding="utf-8") as f:
            for ln in lines:
                f.write(json.dumps(ln, ensure_ascii=False) + "\n")
    aggregate(lines, run_id=p.name).write(p / "scores.json")
    return p


if __name__ == "__main__":  # python tests/report_fixtures.py OUT_DIR — a run to look at by hand
    import sys

    print(make_run_dir(sys.argv[1] if len(sys.argv) > 1 else "runs/asb-fixture"))
