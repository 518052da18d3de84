"""Validate every record of a source and summarise it (``localbench data check --benchmark agentleak``).

Unlike load_scenarios, which stops at the first bad record, this loads each record (a file, or a line
of a JSONL file) on its own so that one run reports every failure, and groups the warnings by field
and kind so that a quirk repeated over many records reads as one line. The categories are verticals;
"private items" are vault fields and "people" are records.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from localbench.benchmarks.agentleak.issues import LoadIssue, ScenarioError
from localbench.benchmarks.agentleak.loaders import documents, load_document
from localbench.benchmarks.agentleak.scenario import VERTICALS, Scenario


@dataclass
class FileResult:
    """One record: a file, or one line of a JSONL file (``label`` is ``file:line`` then)."""

    label: str
    file: str = ""
    line: int | None = None
    scenario: Scenario | None = None
    issues: list[LoadIssue] = field(default_factory=list)
    error: ScenarioError | None = None


@dataclass
class CategoryStats:
    scenarios: int = 0
    items: int = 0  # vault fields
    people: int = 0  # records
    warnings: int = 0
    reference: int = 0  # unused (reference_label is None)


@dataclass
class CheckReport:
    source: str
    files: list[FileResult]
    skipped: list[LoadIssue] = field(default_factory=list)  # files of a directory that hold no scenarios
    reference_label: str | None = None

    @property
    def failed(self) -> list[FileResult]:
        return [f for f in self.files if f.error is not None]

    @property
    def loaded(self) -> list[FileResult]:
        return [f for f in self.files if f.scenario is not None]

    @property
    def issues(self) -> list[LoadIssue]:
        return [*self.skipped, *(i for f in self.loaded for i in f.issues)]

    def per_category(self) -> dict[str, CategoryStats]:
        out: dict[str, CategoryStats] = {}
        for f in self.loaded:
            sc = f.scenario
            assert sc is not None
            st = out.setdefault(sc.vertical, CategoryStats())
            st.scenarios += 1
            st.items += len(sc.vault)
            st.people += len(sc.records)
            st.warnings += len(f.issues)
        return dict(sorted(out.items(), key=lambda kv: VERTICALS.index(kv[0])))  # type: ignore[arg-type]

    def issues_by_field(self) -> list[tuple[str, int, LoadIssue]]:
        """(field pattern with indexes dropped and the kind of issue, e.g. "objective.user_request
        (placeholder_request)"; count; first example), most frequent first."""
        counts: Counter[str] = Counter()
        first: dict[str, LoadIssue] = {}
        for i in self.issues:
            key = field_pattern(i.field) + (f" ({i.code})" if i.code else "")  # not [..]: rich markup
            counts[key] += 1
            first.setdefault(key, i)
        return [(k, n, first[k]) for k, n in counts.most_common()]

    def flag_counts(self) -> Counter[str]:
        """Warnings by kind (placeholder_request, absent_subject, mislabelled_field, forbidden_absent, ...)."""
        return Counter(i.code for i in self.issues)

    def flagged_scenarios(self, code: str) -> list[str]:
        """Ids of the scenarios with at least one warning of this kind."""
        return [f.scenario.id for f in self.loaded if f.scenario and any(i.code == code for i in f.issues)]


def field_pattern(path: str) -> str:
    """'private_vault.records[1].fields.ssn' -> 'private_vault.records[].fields.ssn'."""
    return re.sub(r"\[\d+\]", "[]", path)


def check_source(source: str) -> CheckReport:
    """Load each record of a source independently; a duplicate scenario id fails the later record."""
    docs, skipped = documents(source)
    results: list[FileResult] = []
    seen: dict[str, str] = {}
    for doc in docs:
        r = FileResult(doc.label, doc.file, doc.line)
        try:
            sc, r.issues = load_document(doc)
            if sc.id in seen:
                raise ScenarioError(doc.file, "id", f"scenario id '{sc.id}' is also used by {seen[sc.id]}", doc.line)
            seen[sc.id] = doc.label
            r.scenario = sc
        except ScenarioError as e:
            r.error, r.issues = e, []
        results.append(r)
    return CheckReport(str(source), results, skipped)
