"""How far to trust a run's numbers: each judge behind a metric measured on gold or not, and each
headline metric beside its Rogan–Gladen correction (issue 45 item 3).

The score stage (and a rejudge) calls ``run_trust`` with the run's judgments and the spec's
``judge_eval``: one `localbench judges eval` directory, a list of them, or a folder holding eval
directories (``eval_dirs``). For every judge whose labels feed a metric of the run (the design's
``Metric.judges``, asked of a model: rule judges are left out) it finds the eval that measured that
benchmark judge (eval.json's ``bench_judge``; an eval without one measured the benchmark's item
judge, its first leakage judge) with this preset, and reads its verdict, FPR and FNR with their
intervals from the eval's reliability.json. A judge no eval measured is a warning
(``scores.UNMEASURED``) naming every metric it feeds, which the report and ``compare`` mark.

Each headline metric whose design declares a ``correction`` is corrected per (model, condition,
category) with ``judging.categories.category_rate``: the category's leaked units
(``Benchmark.leak_units``, scenarios as clusters, the design effect estimated over every category
of the model and condition) with the judge's gold FPR/FNR drawn from their posteriors, so the gold
set's uncertainty is carried; where the interval says nothing it is "not identified". Nothing here
reimplements the statistics: they are ``judging.categories``'.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from localbench.errors import UserError
from localbench.judging.categories import NOT_IDENTIFIED, category_rate, design_effect
from localbench.scores import UNMEASURED, CorrectedMetric, Interval, JudgeTrust, JudgeWarning, Scores, Trust

EVAL_CONFIG = "eval.json"  # gold_eval.CONFIG_FILE
RELIABILITY = "reliability.json"  # what `judges eval` (its report) writes
CONSTRUCTED, REAL = "constructed", "real-transcript"
RULE_MODELS = ("", "rule")  # a Judgment's judge_model when no model answered
CORRECTED, UNMEASURED_STATUS, NO_CORRECTION = "corrected", "unmeasured", "no correction"


def eval_dirs(judge_eval: str | Sequence[str] | None) -> list[Path]:
    """The eval directories ``judge_eval`` names: a directory holding eval.json is one; a directory
    without one holds eval directories (each subfolder with an eval.json); a list names several."""
    if not judge_eval:
        return []
    out: list[Path] = []
    for value in ([judge_eval] if isinstance(judge_eval, str) else list(judge_eval)):
        p = Path(value)
        if (p / EVAL_CONFIG).is_file():
            out.append(p)
        elif p.is_dir() and (subs := sorted(d for d in p.iterdir() if (d / EVAL_CONFIG).is_file())):
            out += subs
        else:
            raise UserError(f"judge_eval: {p} is neither a `localbench judges eval` directory (no {EVAL_CONFIG}) "
                            "nor a folder of them")
    return list(dict.fromkeys(out))


@dataclass(frozen=True)
class Measurement:
    """What one eval says of one (benchmark judge, preset)."""

    judge: str
    preset: str
    eval: Path
    gold: str
    n_gold: int
    verdict: str
    verdict_text: str
    fpr: Interval | None
    fnr: Interval | None
    binary_kappa: Interval | None
    fp: int
    n_neg: int
    fn: int
    n_pos: int


def _interval(d: Mapping[str, Any] | None) -> Interval | None:
    if not d:
        return None

    def num(k: str) -> float | None:
        v = d.get(k)
        return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)

    return Interval(estimate=num("estimate"), low=num("low"), high=num("high"))


def gold_kind(cfg: Mapping[str, Any]) -> str:
    """What an eval's gold is: eval.json's ``gold_origin`` (``judging.transcript_gold.gold_origin``:
    constructed, real-transcript, or a mix) without its trailing "gold"; constructed for an eval
    recorded before the field existed (every gold set was then)."""
    origin = str(cfg.get("gold_origin") or CONSTRUCTED)
    return origin[:-len(" gold")] if origin.endswith(" gold") else origin


def read_measurements(dirs: Iterable[Path], benchmark: str, item_judge: str) -> dict[tuple[str, str], Measurement]:
    """(benchmark judge, preset) → its measurement, from each eval of ``benchmark`` (the first eval
    that measured a pair wins). An eval with no ``bench_judge`` measured ``item_judge``."""
    out: dict[tuple[str, str], Measurement] = {}
    for d in dirs:
        cfg_path, rel_path = d / EVAL_CONFIG, d / RELIABILITY
        try:
            cfg = json.loads(cfg_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise UserError(f"{cfg_path}: cannot read the judge eval's settings: {e}") from e
        if cfg.get("benchmark", benchmark) != benchmark:
            continue
        try:
            doc = json.loads(rel_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            raise UserError(f"{rel_path}: cannot read the judge eval's reliability file (`localbench judges report "
                            f"{d}` writes it): {e}") from e
        bench_judge = str(cfg.get("bench_judge") or item_judge)
        kind = gold_kind(cfg)
        for j in doc.get("judges", []):
            gold = j.get("gold") or {}
            leak = gold.get("leak") or {}
            verdict = j.get("verdict") or {}
            m = Measurement(bench_judge, j["judge"], d, kind, int(j.get("n_gold") or 0), str(verdict.get("grade", "")),
                            str(verdict.get("text", "")), _interval(leak.get("fpr")), _interval(leak.get("fnr")),
                            _interval(gold.get("binary_kappa")), int(leak.get("fp", 0)), int(leak.get("n_neg", 0)),
                            int(leak.get("fn", 0)), int(leak.get("n_pos", 0)))
            out.setdefault((bench_judge, m.preset), m)
    return out


@dataclass
class UnitCounts:
    """Leaked units and units of one (model, condition, category), per scenario (the cluster)."""

    clusters: dict[str, list[int]] = field(default_factory=lambda: defaultdict(lambda: [0, 0]))
    n_failed: int = 0  # simulations whose leakage call failed (left out, never counted as "no leak")

    @property
    def k(self) -> int:
        return sum(c[0] for c in self.clusters.values())

    @property
    def n(self) -> int:
        return sum(c[1] for c in self.clusters.values())

    def pairs(self) -> list[tuple[int, int]]:
        return [(k, n) for _, (k, n) in sorted(self.clusters.items())]


def unit_counts(bm: Any, transcripts: Sequence[Any], judgments: Sequence[Any], scenarios: Mapping[str, Any]
                ) -> dict[tuple[str, str, str], UnitCounts]:
    """(model, condition, category) → leaked units and units per scenario (``Benchmark.leak_units``;
    a scenario's seeds pooled). Also what `judges report --run` corrects (``localbench.consequences``)."""
    by_sim: dict[str, list[Any]] = defaultdict(list)
    for j in judgments:
        by_sim[j.sim_key].append(j)
    out: dict[tuple[str, str, str], UnitCounts] = defaultdict(UnitCounts)
    for t in transcripts:
        sc = scenarios.get(t.scenario)
        if sc is None:
            continue
        c = out[(t.model, t.condition, bm.category_of(sc))]
        units = None if t.error else bm.leak_units(sc, by_sim.get(t.key, []))
        if units is None:
            c.n_failed += 1
            continue
        cl = c.clusters[t.scenario]
        cl[0] += sum(lv != "none" for lv in units.values())
        cl[1] += len(units)
    return out


def unmeasured_warning(t: JudgeTrust, answers: int) -> JudgeWarning:
    return JudgeWarning(
        judge=t.judge, judge_model=t.judge_model, pattern=UNMEASURED, count=answers, total=answers, unit="answers",
        metrics=list(t.metrics),
        message=f"{t.judge} judge ({t.judge_model}): never measured against gold (no `localbench judges eval` in the "
                f"spec's judge_eval measured it), so nothing says how often its labels are wrong; the metrics computed "
                f"from them ({', '.join(t.metrics)}) are marked and left uncorrected")


def run_trust(bm: Any, scores: Scores, transcripts: Sequence[Any], judgments: Sequence[Any],
              scenarios: Mapping[str, Any], judge_eval: str | Sequence[str] | None, seed: int = 0
              ) -> tuple[Trust | None, list[JudgeWarning]]:
    """The run's trust section and a warning per unmeasured judge (see the module docstring); no
    section (None) where no model judge labelled a metric of the run (rules computed every number)."""
    design = bm.design
    dirs = eval_dirs(judge_eval)
    item_judge = (bm.leakage_judges or ("",))[0]
    measured = read_measurements(dirs, bm.name, item_judge)
    answers: dict[tuple[str, str], int] = defaultdict(int)
    for j in judgments:
        if j.judge_model not in RULE_MODELS:
            answers[(j.judge, j.judge_model)] += 1
    with_values = list(dict.fromkeys(r.metric for r in scores.rows if r.n > 0 and not r.group))
    behind: dict[tuple[str, str], list[str]] = defaultdict(list)
    for name in with_values:
        for judge in design.metric(name).judges:
            for (j, preset) in answers:
                if j == judge:
                    behind[(j, preset)].append(name)
    judges: list[JudgeTrust] = []
    warnings: list[JudgeWarning] = []
    for (j, preset), metrics in behind.items():
        m = measured.get((j, preset))
        if m is None:
            t = JudgeTrust(judge=j, judge_model=preset, measured=False, metrics=metrics)
            warnings.append(unmeasured_warning(t, answers[(j, preset)]))
        else:
            t = JudgeTrust(judge=j, judge_model=preset, measured=True, metrics=metrics, eval=str(m.eval), gold=m.gold,
                           n_gold=m.n_gold, verdict=m.verdict, verdict_text=m.verdict_text, fpr=m.fpr, fnr=m.fnr,
                           binary_kappa=m.binary_kappa)
        judges.append(t)
    if not judges:
        return None, []
    corrected = _corrected(bm, scores, transcripts, judgments, scenarios, measured, answers, seed)
    notes = []
    if not dirs:
        notes.append("No judge eval was given (the spec's judge_eval, or --judge-eval): no judge of this run is "
                     "measured against gold.")
    return Trust(evals=[str(d) for d in dirs], judges=judges, metrics=corrected, notes=notes), warnings


def _corrected(bm: Any, scores: Scores, transcripts: Sequence[Any], judgments: Sequence[Any],
               scenarios: Mapping[str, Any], measured: dict[tuple[str, str], Measurement],
               answers: Mapping[tuple[str, str], int], seed: int) -> list[CorrectedMetric]:
    design = bm.design
    clusters = None
    out: list[CorrectedMetric] = []
    for r in scores.rows:
        if r.group or r.n <= 0 or design.headline.get(r.category) != r.metric:
            continue
        metric = design.metric(r.metric)
        presets = [(j, p) for j in metric.judges for (jj, p) in answers if jj == j]
        if len(presets) != 1:  # a rule computes it, or no model judge labelled it
            continue
        judge, preset = presets[0]
        base = dict(metric=r.metric, model=r.model, condition=r.condition, category=r.category, judge=judge,
                    judge_model=preset, raw=Interval(estimate=r.mean, low=r.ci_low, high=r.ci_high))
        if not metric.correction:
            out.append(CorrectedMetric(**base, status=NO_CORRECTION,
                                       note="not a share of judged units, so its judge's error rates do not correct "
                                            "it by Rogan–Gladen; read it beside the judge's FPR and FNR"))
            continue
        if clusters is None:
            clusters = unit_counts(bm, transcripts, judgments, scenarios)
        uc = clusters.get((r.model, r.condition, r.category)) or UnitCounts()
        cells, k, n = uc.clusters, uc.k, uc.n
        scale = 100.0 if metric.unit == "percent" else 1.0
        flip = metric.correction == "no_leak_rate"

        def shown(x: float) -> float:
            return scale * ((1.0 - x) if flip else x)

        base.update(units=n, leaked=k, n_scenarios=len(cells), observed=shown(k / n) if n else None)
        m = measured.get((judge, preset))
        if m is None:
            out.append(CorrectedMetric(**base, status=UNMEASURED_STATUS,
                                       note="its judge was never measured against gold: no error rates to correct with"))
            continue
        if not n:
            out.append(CorrectedMetric(**base, status=NOT_IDENTIFIED, note="no leakage units were scored"))
            continue
        if m.verdict == "incomplete" or m.n_neg <= 0 or m.n_pos <= 0:
            out.append(CorrectedMetric(**base, status=NOT_IDENTIFIED,
                                       note="its gold eval is incomplete, or its gold set lacks leaks or non-leaks"))
            continue
        every = [p for (mo, co, _), u in clusters.items() if (mo, co) == (r.model, r.condition) for p in u.pairs()]
        cr = category_rate(k, n, m.fp, m.n_neg, m.fn, m.n_pos, design_effect(every), seed=seed)
        if not cr.identified:
            out.append(CorrectedMetric(**base, status=NOT_IDENTIFIED,
                                       note=f"{k}/{n} units over {len(cells)} scenarios do not pin the corrected "
                                            "rate down with this judge's error rates"))
            continue
        lo, hi = sorted((shown(cr.low), shown(cr.high)))
        est = shown(cr.estimate) if not math.isnan(cr.estimate) else None
        out.append(CorrectedMetric(**base, status=CORRECTED, corrected=Interval(estimate=est, low=lo, high=hi),
                                   note=f"design effect {cr.design_effect:.2f}"))
    return out

