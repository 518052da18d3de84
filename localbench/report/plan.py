"""The tables and figures a benchmark's own report part shows (``Benchmark.report_plan``).

A leaf of report/: the builders' argument and result types (``RunData``, ``CellFormat``, ``Table``,
``FigureResult``) are named in words, not imported, so that report/data can hand a plan out without
an import cycle through the builders' modules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ReportPlan:
    """The tables and figures a benchmark's report shows, in order, built with report/'s helpers.

    ``tables``: builders ``(RunData, CellFormat) -> list[Table]``; ``figures``: builders
    ``RunData -> FigureResult``. The report opens with ``lead`` (``(RunData, CellFormat) -> Table``:
    its headline results) and the figure named ``lead_figure``; the other tables and figures follow.
    """

    tables: tuple[Callable[..., Any], ...] = ()
    figures: tuple[Callable[..., Any], ...] = ()
    lead: Callable[..., Any] | None = None
    lead_figure: str = ""
    glossary_note: str = ""  # a line under the metric glossary
