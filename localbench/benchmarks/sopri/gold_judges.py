"""SopriBench's gold for each judge behind a headline metric: the granularity judge (PES, ACC,
GRAN) is its item judge, with the minimal pairs of ``gold_pairs``. (The ``exact`` judge is a rule,
not a model, and the ``intent`` labels are not a headline metric's judge.)"""

from __future__ import annotations

from typing import Any

from localbench.benchmarks.sopri.gold_pairs import build_gold as build_item_gold
from localbench.benchmarks.sopri.judges import GRANULARITY_JUDGE, SlotItemJudge
from localbench.judging.judge_gold import ItemGoldJudge


def gold_judges() -> dict[str, Any]:
    return {GRANULARITY_JUDGE: ItemGoldJudge(GRANULARITY_JUDGE, SlotItemJudge(), build_item_gold)}
