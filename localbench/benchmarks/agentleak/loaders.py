"""One entry point for AgentLeak scenarios, whatever their source.

``load_scenarios(source)`` takes ``builtin`` (the repo's scenarios/agentleak-mini/), ``builtin:NAME``
(another folder under scenarios/), a directory, or a file. A directory may hold localbench-format
files (YAML or JSON, one scenario each, in any sub-folder) and released JSONL files (one scenario per
line); the format is detected per record. It returns the scenarios in a fixed order (vertical, then
id) with every warning; a record that cannot be loaded raises ScenarioError naming the file, the line
and the field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from localbench.benchmarks.agentleak import suite, upstream
from localbench.benchmarks.agentleak.issues import LoadIssue, ScenarioError
from localbench.benchmarks.agentleak.scenario import VERTICALS, Scenario, Vertical
from localbench import scenario_files
from localbench.scenario_files import (
    SCENARIOS_DIR,
    folder_hint,
    parse_names,
    read_structured,
    load_each,
    resolve_builtin,
    take,
)

__all__ = [
    "BUILTIN_DIR",
    "SCENARIOS_DIR",
    "Document",
    "LoadIssue",
    "LoadResult",
    "ScenarioError",
    "documents",
    "load_document",
    "load_scenarios",
    "parse_verticals",
]

BUILTIN_NAME = "agentleak-mini"
BUILTIN_DIR = SCENARIOS_DIR / BUILTIN_NAME
SUFFIXES = (".yaml", ".yml", ".json")
_ALIASES: dict[str, Vertical] = {v: v for v in VERTICALS} | {v[:3]: v for v in VERTICALS} | {
    "health": "healthcare", "medical": "healthcare", "law": "legal", "hr": "corporate"}


class LoadResult(scenario_files.LoadResult[Scenario]):
    """Scenarios in order (vertical, then id) and the warnings of the records they came from."""

    category = "vertical"


@dataclass(frozen=True)
class Document:
    """One scenario record before parsing: where it is (file, line), its vertical if the path says, how
    to read it."""

    file: str
    line: int | None
    hint: Vertical | None
    read: Callable[[], Any]

    @property
    def label(self) -> str:
        return f"{self.file}:{self.line}" if self.line is not None else self.file


def parse_verticals(categories: Iterable[str] | str | None) -> set[Vertical] | None:
    """Verticals by name or prefix (healthcare, fin, ...) as a set; None = all."""
    return parse_names(categories, _ALIASES, "vertical", ", ".join(VERTICALS))  # type: ignore[return-value]


def _hint(path: Path, root: Path) -> Vertical | None:
    return folder_hint(path, root, {v: v for v in VERTICALS})  # type: ignore[return-value]


def _jsonl_documents(path: Path, hint: Vertical | None, *, in_directory: bool) -> tuple[list[Document], list[LoadIssue]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(str(path), None, f"cannot read: {e}") from e
    docs = [Document(str(path), n, hint, lambda t=t, n=n: upstream.parse_line(t, str(path), n))
            for n, t in enumerate(lines, 1) if t.strip()]
    if in_directory and docs:
        try:
            first = docs[0].read()
        except ScenarioError:
            first = None
        if not upstream.looks_upstream(first):
            return [], [LoadIssue(str(path), "scenario_id", "holds no AgentLeak scenarios (its first record is not one); "
                                  "skipped", docs[0].line, "skipped_file")]
    return docs, []


def _dir_documents(root: Path) -> tuple[list[Document], list[LoadIssue]]:
    docs: list[Document] = []
    issues: list[LoadIssue] = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).parts
        if not p.is_file() or any(x.startswith((".", "_")) for x in rel):
            continue
        if p.suffix == ".jsonl":
            d, i = _jsonl_documents(p, _hint(p, root), in_directory=True)
            docs += d
            issues += i
        elif p.suffix in SUFFIXES and p.name.lower() not in ("readme.yaml",):
            docs.append(Document(str(p), None, _hint(p, root), lambda p=p: read_structured(p)))
    return docs, issues


def documents(source: str | Path) -> tuple[list[Document], list[LoadIssue]]:
    """The scenario records of a source, unparsed, in path (then line) order, and the files skipped."""
    s = str(source)
    if s == "builtin" or s.startswith("builtin:"):
        return _dir_documents(resolve_builtin(s, BUILTIN_NAME))
    p = Path(s).expanduser()
    if p.is_dir():
        docs, issues = _dir_documents(p)
        if not docs:
            raise ScenarioError(s, None, "no AgentLeak scenarios in this directory (.jsonl, .yaml, .yml or .json)")
        return docs, issues
    if p.is_file():
        if p.suffix == ".jsonl":
            docs, _ = _jsonl_documents(p, None, in_directory=False)
            if not docs:
                raise ScenarioError(s, None, "empty file: no scenario lines")
            return docs, []
        return [Document(str(p), None, None, lambda: read_structured(p))], []
    raise ScenarioError(s, None, "no such file or directory (a scenario source is 'builtin', a directory, "
                                 "a released .jsonl file or a scenario file)")


def load_document(doc: Document) -> tuple[Scenario, list[LoadIssue]]:
    """Parse one record in whichever format it is in; ScenarioError if it cannot be loaded."""
    data = doc.read()
    if upstream.looks_upstream(data):
        sc, issues = upstream.convert(data, doc.file, doc.line)
    elif suite.looks_localbench(data):
        if doc.line is not None:  # a localbench-format record on a JSONL line
            try:
                sc, issues = suite.convert(data, doc.file)
            except ScenarioError as e:
                raise ScenarioError(doc.file, e.field, e.detail, doc.line) from e
        else:
            sc, issues = suite.convert(data, doc.file)
    else:
        raise ScenarioError(doc.file, None, "not an AgentLeak scenario: expected a released record (with "
                                            "'scenario_id') or localbench's format (with 'id' and 'vault')", doc.line)
    if doc.hint is not None and doc.hint != sc.vertical:
        issues = [*issues, LoadIssue(doc.file, "vertical", f"{sc.id}: '{sc.vertical}' but the file sits in a "
                                                           f"{doc.hint} folder; the field wins", doc.line, "lint")]
    return sc, issues


def load_scenarios(source: str | Path = "builtin", categories: Iterable[str] | str | None = None,
                   limit: int | None = None) -> LoadResult:
    """Scenarios from a source, ordered by vertical then id, at most ``limit`` per vertical.

    ``categories`` are verticals (healthcare, finance, legal, corporate). Scenario ids must be
    unique within a source: the released 100-record subsets repeat ids of the 1,000, so load one
    file at a time.
    """
    if limit is not None and limit < 1:
        raise ScenarioError("limit", None, f"must be at least 1, got {limit}")
    wanted = parse_verticals(categories)
    docs, skipped = documents(source)
    loaded = load_each(docs, load_document, wanted, "vertical",
                       note=" (the released subsets repeat the full set's ids: load one file)")
    return take(LoadResult([], list(skipped)), loaded, VERTICALS, limit)
