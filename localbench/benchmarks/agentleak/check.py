"""Validate every record of a source and summarise it (``localbench data check --benchmark agentleak``).

Unlike load_scenarios, which stops at the first bad record, this loads each record (a file, or a line
of a JSONL file) on its own so that one run reports every failure, and groups the warnings by field
and kind so that a quirk repeated over many records reads as one line
(``localbench.scenario_files.CheckReport``). The categories are verticals; "private items" are vault
fields and "people" are records.
"""

from __future__ import annotations

from localbench.benchmarks.agentleak.loaders import documents, load_document
from localbench.benchmarks.agentleak.scenario import VERTICALS, Scenario
from localbench.scenario_files import CheckReport, Tally, check_records


def tally(sc: Scenario) -> Tally:
    return Tally(sc.vertical, items=len(sc.vault), people=len(sc.records))


def check_source(source: str) -> CheckReport:
    """Load each record of a source independently; a duplicate scenario id fails the later record."""
    docs, skipped = documents(source)
    return CheckReport(str(source), check_records(docs, load_document), tally, VERTICALS, skipped)
