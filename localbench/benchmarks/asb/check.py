"""Validate every scenario file of a source and summarise it (``localbench data check``).

Unlike load_scenarios, which stops at the first bad file, this loads each file on its own so that
one run reports every failure, and groups the warnings by field so that a quirk repeated over many
files reads as one line (``localbench.scenario_files.CheckReport``). For the upstream release it
adds how many scenarios of each category are in the paper's inferred 352.
"""

from __future__ import annotations

from localbench.benchmarks.asb import upstream
from localbench.benchmarks.asb.loaders import CATEGORY_ORDER, documents, load_document
from localbench.benchmarks.asb.scenario import Scenario
from localbench.scenario_files import CheckReport, Tally, check_records


def _upstream(sc: Scenario) -> bool:
    return sc.metadata.get("format") == "agentsocialbench"


def tally(sc: Scenario) -> Tally:
    return Tally(sc.category, items=len(sc.items), people=len(sc.people),
                 reference=_upstream(sc) and upstream.in_paper_subset(sc))


def check_source(source: str) -> CheckReport:
    """Load each file of a source independently; duplicate scenario ids fail the later file."""
    rep = CheckReport(str(source), check_records(documents(source), load_document), tally, CATEGORY_ORDER)
    if rep.loaded and all(_upstream(f.scenario) for f in rep.loaded):
        rep.reference_label = "in paper's 352"  # the paper-subset column: for the upstream release only
    return rep
