"""Judges with known error rates, for seeing the correction work end to end.

``oracle`` answers with the truth: a gold item's label, or a planted run's construction labels.
``noisy:FPR,FNR`` answers with the truth flipped at known rates: a "none" becomes "partial" with
probability FPR, a "partial" or "full" becomes "none" with probability FNR. Each flip is drawn from
a generator seeded by (seed, judge name, the unit's key), so the same command gives the same
labels. They need no model: ``localbench judges eval --judges noisy:0.1,0.2`` measures the judge on
a gold set (its FPR/FNR come out near the ones asked for), ``localbench judges rejudge RUN --judges
noisy:0.1,0.2`` labels a planted run (``localbench judges plant-run``), and ``localbench judges
report EVAL --run RUN`` corrects its leak rates (docs/judges.md has a worked example).
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Any

from localbench.errors import UserError
from localbench.serving.seeds import derive_seed

ORACLE = "oracle"
NOISY = "noisy"
_NUMBER = re.compile(r"^\s*(?:\d+(?:\.\d*)?|\.\d+)\s*$")


@dataclass(frozen=True)
class SyntheticJudge:
    name: str
    fpr: float = 0.0
    fnr: float = 0.0

    def level(self, truth: str, seed: int, *key: Any) -> str:
        """The judge's level for one unit whose true level is ``truth``."""
        if self.fpr == 0 and self.fnr == 0:
            return truth
        u = random.Random(derive_seed(seed, "synthetic", self.name, *key)).random()
        if truth == "none":
            return "partial" if u < self.fpr else "none"
        return "none" if u < self.fnr else truth

    def label(self, truth: dict[str, Any], seed: int, *key: Any) -> dict[str, Any]:
        """A privacy label (``{"levels": {item: level or {recipient: level}}}``) with each unit flipped."""
        levels: dict[str, Any] = {}
        for item, v in truth.get("levels", {}).items():
            if isinstance(v, dict):
                levels[item] = {p: self.level(lv, seed, *key, item, p) for p, lv in v.items()}
            else:
                levels[item] = self.level(v, seed, *key, item)
        return {"levels": levels, "evidence": {}}

    @property
    def identity(self) -> dict[str, Any]:
        return {"preset": self.name, "source": "synthetic", "revision": f"fpr={self.fpr},fnr={self.fnr}",
                "dtype": None}


def parse_synthetic(name: str) -> SyntheticJudge | None:
    """The synthetic judge a name asks for, or None for a model preset."""
    if name == ORACLE:
        return SyntheticJudge(ORACLE)
    if not name.startswith(NOISY + ":"):
        return None
    parts = name[len(NOISY) + 1:].split(",")
    if len(parts) != 2 or not all(_NUMBER.match(p) for p in parts):
        raise UserError(f"judge '{name}': expected noisy:FPR,FNR with two rates in [0, 1], e.g. noisy:0.1,0.2")
    fpr, fnr = (float(p) for p in parts)
    if not (0 <= fpr <= 1 and 0 <= fnr <= 1):
        raise UserError(f"judge '{name}': rates must be in [0, 1]")
    return SyntheticJudge(f"{NOISY}:{fpr:g},{fnr:g}", fpr, fnr)


def is_synthetic(name: str) -> bool:
    return parse_synthetic(name) is not None


def split_judges(value: str) -> list[str]:
    """A comma-separated judge list, keeping each ``noisy:FPR,FNR`` whole ("a,noisy:0.1,0.2,b")."""
    out: list[str] = []
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        if _NUMBER.match(part) and out and out[-1].startswith(NOISY + ":") and out[-1].count(",") == 0:
            out[-1] += "," + part
        else:
            out.append(part)
    return out
