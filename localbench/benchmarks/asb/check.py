"""Validate every scenario file of a source and summarise it (``localbench data check``).

Unlike load_scenarios, which stops at the first bad file, this loads each file on its own so that
one run reports every failure, and groups the warnings by field so that a quirk repeated over many
files reads as one line.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from localbench.benchmarks.asb import upstream
from localbench.benchmarks.asb.issues import LoadIssue, ScenarioError
from localbench.benchmarks.asb.loaders import CATEGORY_ORDER, documents, load_document
from localbench.benchmarks.asb.scenario import Category, Scenario


@dataclass
class FileResult:
    label: str
    scenario: Scenario | None = None
    issues: list[LoadIssue] = field(default_factory=list)
    error: ScenarioError | None = None


@dataclass
class CategoryStats:
    scenarios: int = 0
    items: int = 0
    people: int = 0
    warnings: int = 0
    reference: int = 0  # upstream scenarios in the paper's inferred 352


@dataclass
class CheckReport:
    source: str
    files: list[FileResult]

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if f.error is not None]

    @property
    def loaded(self) -> list[FileResult]:
        return [f for f in self.files if f.scenario is not None]

    @property
    def issues(self) -> list[LoadIssue]:
        return [i for f in self.loaded for i in f.issues]

    @property
    def all_upstream(self) -> bool:
        return bool(self.loaded) and all(f.scenario.metadata.get("format") == "agentsocialbench"  # type: ignore[union-attr]
                                         for f in self.loaded)

    @property
    def reference_label(self) -> str | None:
        """The paper-subset column is shown for the upstream release only."""
        return "in paper's 352" if self.all_upstream else None

    def per_category(self) -> dict[Category, CategoryStats]:
        out: dict[Category, CategoryStats] = {}
        for f in self.loaded:
            sc = f.scenario
            assert sc is not None
            st = out.setdefault(sc.category, CategoryStats())
            st.scenarios += 1
            st.items += len(sc.items)
            st.people += len(sc.people)
            st.warnings += len(f.issues)
            st.reference += sc.metadata.get("format") == "agentsocialbench" and upstream.in_paper_subset(sc)
        return dict(sorted(out.items(), key=lambda kv: CATEGORY_ORDER.index(kv[0])))

    def issues_by_field(self) -> list[tuple[str, int, LoadIssue]]:
        """(field pattern with indexes dropped, count, first example), most frequent first."""
        counts: Counter[str] = Counter()
        first: dict[str, LoadIssue] = {}
        for i in self.issues:
            key = field_pattern(i.field)
            counts[key] += 1
            first.setdefault(key, i)
        return [(k, n, first[k]) for k, n in counts.most_common()]


def field_pattern(path: str) -> str:
    """'participants[3].privacy_boundary.must_not_cross[5]' -> 'participants[].privacy_boundary.must_not_cross[]'."""
    return re.sub(r"\[\d+\]", "[]", path)


def check_source(source: str) -> CheckReport:
    """Load each file of a source independently; duplicate scenario ids fail the later file."""
    results: list[FileResult] = []
    seen: dict[str, str] = {}
    for doc in documents(source):
        r = FileResult(doc.label)
        try:
            sc, r.issues = load_document(doc)
            if sc.id in seen:
                raise ScenarioError(doc.label, "id", f"scenario id '{sc.id}' is also used by {seen[sc.id]}")
            seen[sc.id] = doc.label
            r.scenario = sc
        except ScenarioError as e:
            r.error, r.issues = e, []
        results.append(r)
    return CheckReport(str(source), results)
