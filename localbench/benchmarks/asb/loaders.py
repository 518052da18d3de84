"""One entry point for AgentSocialBench scenarios, whatever their source.

``load_scenarios(source)`` takes ``builtin`` (the repo's asb-mini suite), ``builtin:NAME`` (another
folder under scenarios/), a directory or file (the upstream release's JSON or the normalized
YAML/JSON format, detected per file), or ``hf:NAME`` (the Hugging Face dataset). It returns the
scenarios in a fixed order (category, then id) with every warning; a file that cannot be loaded
raises ScenarioError naming the file and the field.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from localbench.benchmarks.asb import suite, upstream
from localbench.benchmarks.asb.issues import LoadIssue, ScenarioError
from localbench.benchmarks.asb.scenario import CATEGORY_NAMES, Category, Scenario
from localbench import scenario_files
from localbench.scenario_files import (
    SCENARIOS_DIR,
    check_text_fields,
    folder_hint,
    parse_names,
    read_structured,
    load_each,
    resolve_builtin,
    take,
)

__all__ = [
    "BUILTIN_DIR",
    "Document",
    "LoadIssue",
    "LoadResult",
    "ScenarioError",
    "documents",
    "load_document",
    "load_file",
    "load_scenarios",
    "parse_categories",
]

BUILTIN_DIR = SCENARIOS_DIR / "asb-mini"
CATEGORY_ORDER: tuple[Category, ...] = tuple(CATEGORY_NAMES)  # CD MC CU GC HS CM AM
SUFFIXES = (".json", ".yaml", ".yml")
Subset = Literal["all", "paper"]

_ALIASES: dict[str, Category] = {c.lower(): c for c in CATEGORY_NAMES}
_ALIASES |= {name: c for c, name in CATEGORY_NAMES.items()}
_ALIASES |= {"mg": "GC", "group_chat": "GC"}


class LoadResult(scenario_files.LoadResult[Scenario]):
    """Scenarios in order (category, then id) and the warnings of the files they came from."""


@dataclass(frozen=True)
class Document:
    """One scenario record before parsing: where it is, its category if the path says, how to read it."""

    label: str
    hint: Category | None
    read: Callable[[], Any]

    @property
    def file(self) -> str:  # what errors name (a file, or a record of the hf dataset)
        return self.label

    line = None  # one scenario per file


def parse_categories(categories: Iterable[str] | str | None) -> set[Category] | None:
    """Category codes (CD, gc…) or upstream names (cross_domain…) as a set of codes; None = all."""
    return parse_names(categories, _ALIASES, "category",  # type: ignore[return-value]
                       f"{', '.join(CATEGORY_ORDER)} or their long names")


def _category_hint(path: Path, root: Path) -> Category | None:
    return folder_hint(path, root, _ALIASES)  # type: ignore[return-value]


def _dir_documents(root: Path) -> list[Document]:
    docs = []
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).parts
        if p.suffix not in SUFFIXES or not p.is_file() or any(x.startswith((".", "_")) for x in rel):
            continue
        docs.append(Document(str(p), _category_hint(p, root), lambda p=p: read_structured(p)))
    return docs


def documents(source: str | Path) -> list[Document]:
    """The scenario records of a source, unparsed, in path order."""
    s = str(source)
    if s == "builtin" or s.startswith("builtin:"):
        return _dir_documents(resolve_builtin(s, "asb-mini"))
    if s.startswith("hf:"):
        from localbench.benchmarks.asb.hf_dataset import hf_records

        records, folder = hf_records(s[3:])
        if folder is not None:
            return _dir_documents(folder)
        return [Document(label, upstream.UPSTREAM_CATEGORIES.get(str(r.get("category"))), lambda r=r: r)
                for label, r in records]
    p = Path(s).expanduser()
    if p.is_dir():
        docs = _dir_documents(p)
        if not docs:
            raise ScenarioError(s, None, f"no scenario files ({', '.join(SUFFIXES)}) in this directory")
        return docs
    if p.is_file():
        return [Document(str(p), None, lambda: read_structured(p))]
    raise ScenarioError(s, None, "no such file or directory (a scenario source is 'builtin', "
                                 "a directory, a file, or hf:NAME)")


def load_document(doc: Document) -> tuple[Scenario, list[LoadIssue]]:
    """Parse one record in whichever format it is in; ScenarioError if it cannot be loaded."""
    data = doc.read()
    check_text_fields(data, doc.label)  # files are checked as they are read; hub records here
    if upstream.looks_upstream(data):
        sc, issues = upstream.convert(data, doc.label)
    elif suite.looks_normalized(data):
        sc, issues = suite.convert(data, doc.label)
    else:
        raise ScenarioError(doc.label, None, "not a scenario: expected an AgentSocialBench file (with "
                                             "'scenario_id') or the normalized format (with 'id' and 'people')")
    if doc.hint is not None and doc.hint != sc.category:
        issues = [*issues, LoadIssue(doc.label, "category", f"'{sc.category}' but the file sits in a "
                                                            f"{doc.hint} folder; the field wins")]
    return sc, issues


def load_file(path: str | Path) -> tuple[Scenario, list[LoadIssue]]:
    p = Path(path)
    return load_document(Document(str(p), None, lambda: read_structured(p)))


def load_scenarios(source: str | Path = "builtin", categories: Iterable[str] | str | None = None,
                   limit: int | None = None, *, subset: Subset = "all") -> LoadResult:
    """Scenarios from a source, ordered by category then id, at most ``limit`` per category.

    ``subset="paper"`` keeps the 352 upstream scenarios the paper reports (inferred from metadata,
    see docs/fidelity.md); the default keeps everything (372 for the upstream release).
    """
    if limit is not None and limit < 1:
        raise ScenarioError("limit", None, f"must be at least 1, got {limit}")
    if subset not in ("all", "paper"):
        raise ScenarioError("subset", None, f"'{subset}' is not 'all' or 'paper'")
    wanted = parse_categories(categories)
    loaded = load_each(documents(source), load_document, wanted, "category")
    if subset == "paper":
        foreign = [sc.id for sc, _ in loaded if sc.metadata.get("format") != "agentsocialbench"]
        if foreign:
            raise ScenarioError(str(source), None, "subset 'paper' applies only to the upstream release; "
                                                   f"'{foreign[0]}' is not from it")
        loaded = [(sc, iss) for sc, iss in loaded if upstream.in_paper_subset(sc)]
    return take(LoadResult([]), loaded, CATEGORY_ORDER, limit)
