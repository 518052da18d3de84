"""The AgentLeak harness's stored traces (``results/traces/trace_*.json``, or the same objects one per
line in a .jsonl / .jsonl.gz), read and checked field by field.

A trace is one scenario run by one model through the harness's fixed scaffold: a single-agent call
(its reply is the single-agent C1 message), then coordinator → worker → final answer (C2 both ways,
a C5 "memory" write, the multi-agent C1). Each channel message carries the upstream detector's flag
(``has_leak``) and the field names it found (``leaked_fields``); ``results`` holds the trace-level flags
the paper's tables are computed from. Reading never drops a trace silently: a trace that does not
parse or validate is a ``TraceProblem`` naming the file, the line and the field.
"""

from __future__ import annotations

import gzip
import json
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from localbench.errors import UserError

FLAG_KEYS = ("single_leaked", "multi_leaked", "c1_leaked", "c2_leaked", "c5_leaked")
UPSTREAM_CHANNELS = ("C1", "C2", "C5")


class _Model(BaseModel):
    model_config = ConfigDict(extra="allow")


class AllowedSet(_Model):
    fields: list[str]
    forbidden_fields: list[str] = Field(default_factory=list)


class TraceInput(_Model):
    vault: dict[str, Any]
    request: str
    allowed_set: AllowedSet

    @field_validator("vault")
    @classmethod
    def _flat(cls, v: dict[str, Any]) -> dict[str, Any]:
        bad = [k for k, x in v.items() if isinstance(x, (dict, list))]
        if bad:
            raise ValueError(f"vault field '{bad[0]}' is not a plain value")
        return v


class ChannelMessage(_Model):
    channel: str
    source: str
    target: str
    content: str
    has_leak: bool
    leaked_fields: list[str]
    llm_call_id: str | None = None

    @field_validator("channel")
    @classmethod
    def _known(cls, v: str) -> str:
        if v not in UPSTREAM_CHANNELS:
            raise ValueError(f"channel '{v}' is none of {', '.join(UPSTREAM_CHANNELS)}")
        return v


class Results(_Model):
    single_leaked: bool
    multi_leaked: bool
    c1_leaked: bool
    c2_leaked: bool
    c5_leaked: bool


class UpstreamTrace(_Model):
    trace_id: str
    scenario_id: str
    model: str
    vertical: str
    attack_family: str | None = None  # holds the attack *class* (role_confusion ...) or null
    input: TraceInput
    channel_messages: list[ChannelMessage] = Field(min_length=1)
    results: Results
    llm_calls: list[dict[str, Any]] = Field(default_factory=list)
    timestamp: str = ""

    def vault_text(self) -> dict[str, str]:
        """Every vault value as the text the agents saw (numbers as Python wrote them)."""
        return {k: "" if v is None else str(v) for k, v in self.input.vault.items()}


@dataclass(frozen=True)
class TraceProblem:
    """A trace that could not be used: where it is and what is wrong with it."""

    file: str
    line: int | None  # 1-based line of a JSONL source; None for a one-trace JSON file
    field: str  # dotted path of the offending field ("" for a line that is no JSON at all)
    message: str

    def __str__(self) -> str:
        at = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{at}: {self.field + ': ' if self.field else ''}{self.message}"


class TraceFileError(UserError):
    """A trace source that cannot be read at all (missing, truncated archive, not a trace file)."""


@dataclass
class ReadTraces:
    source: Path
    files: list[Path]
    traces: list[tuple[str, int | None, UpstreamTrace]]  # (file, line, trace)
    problems: list[TraceProblem]

    @property
    def n_records(self) -> int:
        return len(self.traces) + len(self.problems)


def _field_path(loc: tuple[Any, ...]) -> str:
    return ".".join(str(x) for x in loc)


def parse_trace(data: Any, file: str, line: int | None) -> UpstreamTrace | TraceProblem:
    """One trace object, validated; a TraceProblem naming the first bad field otherwise."""
    if not isinstance(data, dict):
        return TraceProblem(file, line, "", f"a trace is a JSON object, not {type(data).__name__}")
    try:
        return UpstreamTrace.model_validate(data)
    except ValidationError as e:
        err = e.errors()[0]
        return TraceProblem(file, line, _field_path(err["loc"]), err["msg"])


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:
            for n, text in enumerate(fh, 1):
                yield n, text
    except (EOFError, gzip.BadGzipFile, zlib.error) as e:
        raise TraceFileError(f"{path}: the gzip archive is truncated or corrupt ({e}); nothing was imported") from e
    except UnicodeDecodeError as e:
        raise TraceFileError(f"{path}: not UTF-8 text ({e})") from e


def _read_jsonl(path: Path, traces: list, problems: list[TraceProblem]) -> None:
    for n, text in _lines(path):
        if not text.strip():
            continue
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            cut = "" if text.endswith("\n") else " (the last line has no newline: the file may be truncated)"
            problems.append(TraceProblem(str(path), n, "", f"not JSON: {e.msg} at column {e.colno}{cut}"))
            continue
        got = parse_trace(data, str(path), n)
        (problems if isinstance(got, TraceProblem) else traces).append(got if isinstance(got, TraceProblem)
                                                                       else (str(path), n, got))


def read_traces(source: str | Path) -> ReadTraces:
    """Every trace of ``source`` (a .jsonl.gz, a .jsonl, or a folder of trace_*.json), in file order."""
    path = Path(source)
    if not path.exists():
        raise TraceFileError(f"{path}: no such file or folder")
    traces: list[tuple[str, int | None, UpstreamTrace]] = []
    problems: list[TraceProblem] = []
    if path.is_dir():
        files = sorted(path.glob("trace_*.json"))
        if not files:
            raise TraceFileError(f"{path}: a folder of traces must hold trace_*.json files; it holds none")
        for f in files:
            try:
                data = json.loads(f.read_text(encoding="utf-8"))
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                problems.append(TraceProblem(str(f), None, "", f"not JSON: {e}"))
                continue
            got = parse_trace(data, str(f), None)
            (problems if isinstance(got, TraceProblem) else traces).append(
                got if isinstance(got, TraceProblem) else (str(f), None, got))
        return ReadTraces(path, files, traces, problems)
    if not (path.name.endswith(".jsonl") or path.name.endswith(".jsonl.gz")):
        raise TraceFileError(f"{path}: expected a .jsonl, a .jsonl.gz or a folder of trace_*.json files")
    _read_jsonl(path, traces, problems)
    if not traces and not problems:
        raise TraceFileError(f"{path}: holds no traces")
    return ReadTraces(path, [path], traces, problems)
