"""The check a gold set must pass before it is written: cues balanced, cheaters below the floor.

``localbench judges gold build`` runs it on what it built and refuses to write a minimal-pair set
that fails, naming the cheater or the cue (a per-method set, asked with ``--methods`` to study one
construction, is written with the failures printed: it is not a set to rank judges on).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from localbench.judging.cheaters import CHEATER_MAX, CheaterScore, best_cheater, cheater_scores, failing
from localbench.judging.cues import MAX_GAP, CueRate, cue_rates, unbalanced
from localbench.judging.gold import GoldItem
from localbench.judging.pairs import MIN_HARD_SHARE, PAIR_METHODS


@dataclass
class GoldCheck:
    cues: list[CueRate]
    cheaters: list[CheaterScore]
    hard_share: float | None  # paraphrase + inference among leak items; None where they do not apply
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> dict:
        best = best_cheater(self.cheaters)
        return {"ok": self.ok, "problems": self.problems, "hard_share": self.hard_share,
                "best_cheater": {"cheater": best.cheater, "kappa": round(best.kappa, 4)} if best else None,
                "cheaters": [{"cheater": s.cheater, "scope": s.scope, "kappa": round(s.kappa, 4), "n": s.n}
                             for s in self.cheaters],
                "cues": [{"cue": r.cue, "leak": round(r.leak, 4), "none": round(r.none, 4)} for r in self.cues]}


def hard_share(items: Sequence[GoldItem]) -> float | None:
    leaks = [it for it in items if it.label not in (None, "none") and it.meta.get("leak_type") in PAIR_METHODS]
    if not leaks:
        return None
    return sum(it.meta["leak_type"] != "verbatim" for it in leaks) / len(leaks)


def leak_view(items: Sequence[GoldItem]) -> list[GoldItem]:
    """Items labelled in their judge's leak-level view (``GoldItem.level``): the cues and cheaters
    read partial or full against none, which for an abstraction judge is raw disclosure against
    abstraction, for a task judge completed against not (``gold.LabelSpace``)."""
    return [it if it.judge is None or it.label == it.level else it.model_copy(update={"label": it.level})
            for it in items]


def check_gold(items: Sequence[GoldItem]) -> GoldCheck:
    items = leak_view(items)
    cues, scores, share = cue_rates(items), cheater_scores(items), hard_share(items)
    problems = [f"the {s.cheater} cheater reaches κ {s.kappa:.2f} ≥ {CHEATER_MAX} ({s.scope}, {s.n} items)"
                for s in failing(scores)]
    problems += [f"the '{r.cue}' cue differs between classes by {r.gap * 100:.1f} points (leak {r.leak:.1%}, "
                 f"none {r.none:.1%}; at most {MAX_GAP * 100:.0f})" for r in unbalanced(cues)]
    if share is not None and share < MIN_HARD_SHARE - 1e-9:
        problems.append(f"paraphrase and inference are {share:.1%} of the leak items (at least {MIN_HARD_SHARE:.1%})")
    return GoldCheck(cues, scores, share, problems)
