"""Reading scenario sources, the same way for every benchmark: what a load can report, and the file
helpers each benchmark's loader is built from.

- ``ScenarioError``: a record that cannot be used at all; ``LoadIssue``: one that loaded but is wrong
  in its source and was handled in a stated way. Both name the file, the line (JSONL sources: one
  scenario per line) and the field; a ``LoadIssue`` also carries a ``code`` for counting.
- ``read_structured``: one JSON or YAML file, with the file and line of a syntax error.
- ``resolve_builtin``: ``builtin`` / ``builtin:NAME`` as a suite folder under scenarios/.
- ``parse_names`` and ``folder_hint``: category names (with the benchmark's aliases) from a flag or
  from the folders a file sits in.
- ``load_each``, ``take`` and ``LoadResult``: a load's records (ids unique, in the categories asked
  for), in order with at most ``limit`` per category.
- ``check_records`` and ``CheckReport``: `localbench data check`, every record loaded on its own,
  counted per category (``Tally``: how the benchmark counts a scenario) and warnings grouped by field.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from localbench.errors import UserError
from localbench.paths import REPO_ROOT

SCENARIOS_DIR = REPO_ROOT / "scenarios"
_YamlLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the same documents, parsed in C where libyaml is


def where(file: str, line: int | None, field: str | None) -> str:
    """``file:line: field 'f'``; without a file (a flag or spec value), just ``field 'f'``."""
    loc = f"{file}:{line}" if line is not None else str(file)
    if not loc:
        return f"field '{field}'" if field else ""
    return f"{loc}: field '{field}'" if field else loc


class ScenarioError(UserError, ValueError):
    """A scenario record that cannot be loaded; the message names the file, the line and the field."""

    def __init__(self, file: str, field: str | None, message: str, line: int | None = None):
        self.file = str(file)
        self.field = field
        self.line = line
        self.detail = message
        super().__init__(f"{where(self.file, line, field)}: {message}")


@dataclass(frozen=True)
class LoadIssue:
    """Something in a record that loaded but is wrong in the source, and what was done instead."""

    file: str
    field: str
    message: str
    line: int | None = None
    code: str = ""  # the kind of issue, for counting (a benchmark lists its codes)

    def __str__(self) -> str:
        return f"{where(self.file, self.line, self.field)}: {self.message}"


# -- size bounds: a record's text feeds prompts; one huge field costs minutes and gigabytes ----------------

MAX_TEXT_CHARS = 20_000
"""Default bound on any one text field of a scenario or user file. The longest in the released data
(AgentSocialBench, AgentLeak) and the built-in suites is 2,228 characters (an AgentSocialBench task);
``LOCALBENCH_MAX_TEXT_CHARS`` changes it."""

MAX_ID_CHARS = 200
"""Bound on an identifier field (``id``, ``*_id``): ids name keys and files."""

MAX_FILE_MB = 64.0
"""Bound on one scenario or user file read whole (``LOCALBENCH_MAX_FILE_MB`` changes it); the largest
released file is 2.9 MB (a 1,000-line AgentLeak JSONL file)."""


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        raise UserError(f"environment variable {name}={raw!r}: expected a number") from None
    if value <= 0:
        raise UserError(f"environment variable {name}={raw!r}: expected a number above 0")
    return value


def text_limit(field_path: str) -> tuple[int, str]:
    """The bound on one text field and what sets it."""
    last = re.sub(r"\[\d+\]", "", field_path).rpartition(".")[2]
    if last == "id" or last.endswith("_id"):
        return MAX_ID_CHARS, "the bound for identifiers"
    return int(_env_number("LOCALBENCH_MAX_TEXT_CHARS", MAX_TEXT_CHARS)), "LOCALBENCH_MAX_TEXT_CHARS sets it"


def check_text_fields(data: Any, file: str, line: int | None = None, _path: str = "") -> None:
    """ScenarioError naming the first text field (its path: 'posts[2].caption') longer than its bound
    (``text_limit``), so one oversized field is refused before it reaches a prompt."""
    if isinstance(data, str):
        limit, what = text_limit(_path)
        if len(data) > limit:
            raise ScenarioError(file, _path or None, f"{len(data):,} characters, over the bound of {limit:,} "
                                f"({what})", line)
    elif isinstance(data, dict):
        for k, v in data.items():
            check_text_fields(v, file, line, f"{_path}.{k}" if _path else str(k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            check_text_fields(v, file, line, f"{_path}[{i}]")


def read_structured(path: Path) -> Any:
    """One JSON (``.json``) or YAML file; a ScenarioError names the file and where the syntax broke,
    or the file or text field over its size bound (``check_text_fields``)."""
    max_mb = _env_number("LOCALBENCH_MAX_FILE_MB", MAX_FILE_MB)
    try:
        size = path.stat().st_size
    except OSError as e:
        raise ScenarioError(str(path), None, f"cannot read: {e}") from e
    if size > max_mb * 1e6:
        raise ScenarioError(str(path), None, f"{size / 1e6:.1f} MB, over the bound of {max_mb:g} MB for one "
                                             "scenario file (set by LOCALBENCH_MAX_FILE_MB)")
    data = _parse_structured(path)
    check_text_fields(data, str(path))
    return data


def _parse_structured(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(str(path), None, f"cannot read: {e}") from e
    if path.suffix == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as e:
            raise ScenarioError(str(path), None, f"not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})") from e
    try:
        return yaml.load(text, Loader=_YamlLoader)
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        at = f" (line {mark.line + 1})" if mark is not None else ""
        raise ScenarioError(str(path), None, f"not valid YAML: {getattr(e, 'problem', None) or e}{at}") from e


def resolve_builtin(source: str, default: str) -> Path:
    """``builtin`` (the benchmark's ``default`` suite) or ``builtin:NAME``: a folder under scenarios/."""
    name = source.partition(":")[2] or default
    d = SCENARIOS_DIR / name
    if not d.is_dir():
        have = sorted(x.name for x in SCENARIOS_DIR.iterdir() if x.is_dir()) if SCENARIOS_DIR.is_dir() else []
        raise ScenarioError(source, None, f"no built-in suite '{name}' under {SCENARIOS_DIR} "
                                          f"(have: {', '.join(have) or 'none'})")
    return d


def parse_names(values: Iterable[str] | str | None, aliases: Mapping[str, str], what: str,
                expected: str) -> set[str] | None:
    """Category names from a comma list or an iterable, through ``aliases`` (lower-case keys) to the
    benchmark's own names; None = all. An unknown name is a ScenarioError on field 'categories'."""
    if values is None:
        return None
    if isinstance(values, str):
        values = [c for c in values.split(",") if c.strip()]
    out: set[str] = set()
    for c in values:
        name = aliases.get(c.strip().lower())
        if name is None:
            raise ScenarioError("", "categories", f"unknown {what} '{c}' (expected one of {expected})")
        out.add(name)
    return out


def folder_hint(path: Path, root: Path, aliases: Mapping[str, str]) -> str | None:
    """The category a file's folders name (the nearest one wins), if any."""
    for part in reversed(path.relative_to(root).parts[:-1]):
        name = aliases.get(part.lower())
        if name:
            return name
    return None


T = TypeVar("T")
R = TypeVar("R", bound="LoadResult")


@dataclass
class LoadResult(Generic[T]):
    """Records in order (category, then id) and the warnings of the records they came from."""

    scenarios: list[T]
    issues: list[LoadIssue] = field(default_factory=list)
    category: ClassVar[str] = "category"  # the records' attribute that is the benchmark's category

    def by_category(self) -> dict[str, list[T]]:
        out: dict[str, list[T]] = {}
        for s in self.scenarios:
            out.setdefault(getattr(s, self.category), []).append(s)
        return out


def load_each(docs: Iterable[Any], load: Callable[[Any], tuple[Any, list[LoadIssue]]],
              wanted: set[str] | None, category: str, what: str = "scenario id", note: str = ""
              ) -> list[tuple[Any, list[LoadIssue]]]:
    """(record, its warnings) for each document (``load``) whose record's ``category`` is ``wanted``
    (None: all); a document whose path names another category (its ``hint``) is not parsed. Ids
    must be unique within a source (``what``, ``note``: the error's words)."""
    loaded = []
    seen: dict[str, str] = {}
    for doc in docs:
        hint = getattr(doc, "hint", None)
        if wanted is not None and hint is not None and hint not in wanted:
            continue
        rec, issues = load(doc)
        if rec.id in seen:
            raise ScenarioError(doc.file, "id", f"{what} '{rec.id}' is also used by {seen[rec.id]}{note}", doc.line)
        seen[rec.id] = doc.label
        if wanted is None or getattr(rec, category) in wanted:
            loaded.append((rec, issues))
    return loaded


def take(result: R, loaded: Iterable[tuple[Any, list[LoadIssue]]], order: Sequence[str], limit: int | None) -> R:
    """``result`` with ``loaded`` (record, its warnings) added in order (category as in ``order``,
    then id), at most ``limit`` per category; the warnings of the records left out are dropped."""
    counts: Counter[str] = Counter()
    for rec, issues in sorted(loaded, key=lambda x: (order.index(getattr(x[0], result.category)), x[0].id)):
        counts[getattr(rec, result.category)] += 1
        if limit is not None and counts[getattr(rec, result.category)] > limit:
            continue
        result.scenarios.append(rec)
        result.issues.extend(issues)
    return result


# -- `localbench data check`: every record of a source loaded on its own ------------------------------

@dataclass
class RecordResult:
    """One record of a checked source: a file, or one line of a JSONL file (``label`` is ``file:line``)."""

    label: str
    file: str = ""
    line: int | None = None
    scenario: Any = None
    issues: list[LoadIssue] = field(default_factory=list)
    error: ScenarioError | None = None


@dataclass
class CategoryStats:
    """One category's line: scenarios, private items, people, warnings, and how many are in the
    benchmark's reference subset (shown only where the report has a ``reference_label``)."""

    scenarios: int = 0
    items: int = 0
    people: int = 0
    warnings: int = 0
    reference: int = 0


@dataclass(frozen=True)
class Tally:
    """How a benchmark counts one scenario in ``CheckReport.per_category``."""

    category: str
    items: int
    people: int
    reference: bool = False


@dataclass
class CheckReport:
    """What `localbench data check` prints (``localbench.benchmarks.DataCheck``)."""

    source: str
    files: list[RecordResult]
    tally: Callable[[Any], Tally]
    order: tuple[str, ...]  # the categories in the benchmark's order
    skipped: list[LoadIssue] = field(default_factory=list)  # files of a directory that hold no scenarios
    reference_label: str | None = None

    @property
    def failed(self) -> list[RecordResult]:
        return [f for f in self.files if f.error is not None]

    @property
    def loaded(self) -> list[RecordResult]:
        return [f for f in self.files if f.scenario is not None]

    @property
    def issues(self) -> list[LoadIssue]:
        return [*self.skipped, *(i for f in self.loaded for i in f.issues)]

    def per_category(self) -> dict[str, CategoryStats]:
        out: dict[str, CategoryStats] = {}
        for f in self.loaded:
            t = self.tally(f.scenario)
            st = out.setdefault(t.category, CategoryStats())
            st.scenarios += 1
            st.items += t.items
            st.people += t.people
            st.warnings += len(f.issues)
            st.reference += t.reference
        return dict(sorted(out.items(), key=lambda kv: self.order.index(kv[0])))

    def issues_by_field(self) -> list[tuple[str, int, LoadIssue]]:
        """(field pattern with indexes dropped, and the kind of issue where it has one, e.g.
        "objective.user_request (placeholder_request)"; count; first example), most frequent first."""
        counts: Counter[str] = Counter()
        first: dict[str, LoadIssue] = {}
        for i in self.issues:
            key = field_pattern(i.field) + (f" ({i.code})" if i.code else "")  # not [..]: rich markup
            counts[key] += 1
            first.setdefault(key, i)
        return [(k, n, first[k]) for k, n in counts.most_common()]

    def flag_counts(self) -> Counter[str]:
        """Warnings by kind (their ``code``)."""
        return Counter(i.code for i in self.issues)

    def flagged_scenarios(self, code: str) -> list[str]:
        """Ids of the scenarios with at least one warning of this kind."""
        return [f.scenario.id for f in self.loaded if any(i.code == code for i in f.issues)]


def field_pattern(path: str) -> str:
    """'participants[3].privacy_boundary.must_not_cross[5]' -> 'participants[].privacy_boundary.must_not_cross[]'."""
    return re.sub(r"\[\d+\]", "[]", path)


def check_records(docs: Iterable[Any], load: Callable[[Any], tuple[Any, list[LoadIssue]]]) -> list[RecordResult]:
    """Load each record (``doc.label``, ``.file``, ``.line``) on its own, so one run reports every
    failure; a duplicate scenario id fails the later record."""
    results: list[RecordResult] = []
    seen: dict[str, str] = {}
    for doc in docs:
        r = RecordResult(doc.label, doc.file, doc.line)
        try:
            sc, r.issues = load(doc)
            if sc.id in seen:
                raise ScenarioError(doc.file, "id", f"scenario id '{sc.id}' is also used by {seen[sc.id]}", doc.line)
            seen[sc.id] = doc.label
            r.scenario = sc
        except ScenarioError as e:
            r.error, r.issues = e, []
        results.append(r)
    return results


# -- a benchmark's own format: one mapping per scenario, validated by its pydantic model -----------------

def validation_error(e: ValidationError, file: str, *, line: int | None = None,
                     locate: Callable[[str], tuple[str, str]] | None = None,
                     format_doc: str = "scenarios/README.md") -> ScenarioError:
    """The first validation error as "file: field 'vault[3].weight': message". ``locate(message)``
    gives (field, message) for the model's own cross-field checks, which pydantic reports without a
    location."""
    err = e.errors()[0]
    loc = "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in err["loc"]).lstrip(".")
    msg = str(err["msg"]).removeprefix("Value error, ")
    if not loc and locate is not None:
        loc, msg = locate(msg)
    if err["type"] == "missing":
        msg = "missing required field"
    elif err["type"] == "extra_forbidden":
        msg = f"unknown field (see {format_doc} for the format)"
    more = len(e.errors()) - 1
    if more:
        msg += f" (and {more} more problem{'s' if more > 1 else ''})"
    return ScenarioError(file, loc or None, msg, line)


def validate_mapping(model: type[BaseModel], data: Any, file: str, lint: Callable[[Any, str], list[LoadIssue]],
                     **how: Any) -> tuple[Any, list[LoadIssue]]:
    """A scenario mapping as ``model`` (its ``source`` set to the file), plus ``lint``'s warnings;
    ScenarioError (``validation_error``, with ``how``) if it does not validate."""
    if not isinstance(data, dict):
        raise ScenarioError(file, None, "expected a mapping of scenario fields")
    try:
        sc = model.model_validate({**data, "source": data.get("source") or str(file)})
    except ValidationError as e:
        raise validation_error(e, file, **how) from e
    return sc, lint(sc, str(file))
