"""Column (a): the paper's published values, declared once as data (paper_values.yaml)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import yaml

VALUES_FILE = Path(__file__).with_name("paper_values.yaml")


@dataclass(frozen=True)
class PaperValue:
    id: str
    table: str  # where it is published
    row: str  # the row / key there
    quantity: str  # definitions.QUANTITIES
    value: float  # percent, as published
    model: str | None = None
    vertical: str | None = None
    family: str | None = None

    @property
    def decimals(self) -> int | None:
        """Published precision: 1 decimal for rounded values; None for full precision (model_stats.json)."""
        text = repr(self.value)
        return len(text.split(".")[1]) if "." in text and len(text.split(".")[1]) <= 2 else None


@lru_cache(maxsize=1)
def paper_values() -> tuple[PaperValue, ...]:
    doc = yaml.safe_load(VALUES_FILE.read_text(encoding="utf-8"))
    return tuple(PaperValue(**v) for v in doc["values"])
