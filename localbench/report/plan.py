"""The tables and figures a benchmark's own report part shows (``Benchmark.report_plan``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from localbench.report.data import RunData
    from localbench.report.figures import FigureResult
    from localbench.report.tables import CellFormat, Table


@dataclass(frozen=True)
class ReportPlan:
    """The tables and figures a benchmark's report shows, in order, built with report/'s helpers.

    The report opens with ``lead`` (one table: its headline results) and the figure named
    ``lead_figure``; the other tables and figures follow.
    """

    tables: tuple[Callable[["RunData", "CellFormat"], "list[Table]"], ...] = ()
    figures: tuple[Callable[["RunData"], "FigureResult"], ...] = ()
    lead: Callable[["RunData", "CellFormat"], "Table"] | None = None
    lead_figure: str = ""
    glossary_note: str = ""  # a line under the metric glossary
