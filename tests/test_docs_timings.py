"""Every time the docs state a run or a step took (minutes, seconds) cites the file in bench/ that
holds the measurement, and says the number that file holds (issue 47).

The FAQ said the AgentLeak default takes about 8 minutes while getting-started said 5, the
AgentLeak page 226 s and the last measurement was 423 s: three figures, none traceable. So a
claim is one unit of text (a paragraph, a list item, a table row, a line of a code block) that
states a duration; it must name a bench/*.md file (a link or a path), and each duration it states
must be one that file holds, to the claim's own rounding: "226 s" within half a second, "4.1 s"
within 0.05 s, "about 4 minutes" within half a minute, "under 30 minutes" at most 30 minutes.

A duration the program is set to (a timeout, "every 30 s", "SIGKILL 30 s later", a requeue
"5 min before the time limit", "300 s by default") is a setting, not a measurement; so is text in backticks (a log line,
a value in a spec). Those are told apart by the words around the number (``SETTING_BEFORE``,
``SETTING_AFTER``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

LEFT_FOR_ISSUE_43: set[tuple[str, str]] = set()
"""(page, the claim's exact text) left to the change that owns the page (issue 43 is rewriting the GPU
pages): temporary; an entry whose text changes no longer matches, and its claim is checked again."""

SECONDS = {"s": 1, "sec": 1, "second": 1, "seconds": 1, "min": 60, "minute": 60, "minutes": 60, "m": 60}

def _number(name: str) -> str:
    """A number as the docs write it (1,077 or 173.4), as groups NAME and NAME_decimals."""
    return rf"(?P<{name}>\d{{1,3}}(?:,\d{{3}})+|\d+)(?:\.(?P<{name}_decimals>\d+))?"


DURATION = re.compile(
    rf"(?<![\w.,-])(?:(?P<bound>about|~|under|below|less than|at most|within)\s*)?"
    rf"(?:{_number('low')}\s?[–-]\s?)?"
    rf"{_number('value')}\s?(?P<unit>min|minutes?|m(?=\s\d)|s|sec|seconds?)\b"
    rf"(?:\s(?P<sec>\d+)\s?s\b)?(?![-\w])")
"""A duration: 226 s, 173.4 s, 4 min 27 s, 25 m 54 s, about 5 minutes, under 30 minutes, 28–30 s."""

SETTING_BEFORE = re.compile(r"(?:every|nothing for|wait(?:s|ing)? (?:up to|for)|timeout of|MinJobAge \(?)\s*$", re.I)
SETTING_AFTER = re.compile(r"^\s*(?:later|before the time limit|timeout|per-test timeout|by default)\b", re.I)
CODE_SPAN = re.compile(r"`[^`\n]*`")
BENCH_FILE = re.compile(r"bench/[\w.-]+\.md")


@dataclass(frozen=True)
class Duration:
    seconds: float
    tolerance: float  # half the last stated digit's unit
    bound: str  # "" (a value, rounded), "about" or an upper bound ("under", ...)
    text: str

    def held_by(self, measured: list[float]) -> bool:
        if self.bound in ("under", "below", "less than", "at most", "within"):
            return any(v <= self.seconds for v in measured)
        return any(abs(v - self.seconds) <= self.tolerance + 1e-9 for v in measured)


def _value(whole: str, decimals: str | None) -> tuple[float, float]:
    v = float(whole.replace(",", "") + (f".{decimals}" if decimals else ""))
    return v, 0.5 * 10 ** -(len(decimals) if decimals else 0)


def durations(text: str) -> list[Duration]:
    """The durations stated in ``text`` that are measurements (not settings, not in backticks)."""
    text = CODE_SPAN.sub(" ", text)
    out = []
    for m in DURATION.finditer(text):
        if SETTING_BEFORE.search(text[:m.start()]) or SETTING_AFTER.search(text[m.end():]):
            continue
        unit = SECONDS[m["unit"]]
        value, tol = _value(m["value"], m["value_decimals"])
        seconds, tol = value * unit, tol * unit
        if m["sec"]:  # 4 min 27 s: stated to the second
            seconds, tol = seconds + int(m["sec"]), 0.5
        bound = (m["bound"] or "").replace("~", "about")
        out.append(Duration(seconds, tol, bound, m.group(0)))
        if m["low"]:  # a range: both ends are stated values
            lo, lo_tol = _value(m["low"], m["low_decimals"])
            out.append(Duration(lo * unit, lo_tol * unit, bound, m.group(0)))
    return out


def units(page: Path) -> list[str]:
    """A page's units of text: paragraphs, list items, and each table row, heading or line of a code block."""
    out: list[str] = []
    current: list[str] = []
    fenced = False

    def close() -> None:
        if current:
            out.append(" ".join(current))
            current.clear()

    for line in page.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            close()
            fenced = not fenced
            continue
        if fenced or not stripped or stripped.startswith(("|", "#")):  # a line of its own, or none
            close()
            if stripped:
                out.append(stripped)
            continue
        if re.match(r"(?:[-*+]|\d+\.)\s", stripped):
            close()
        current.append(stripped)
    close()
    return out


def bench_durations(name: str) -> list[float]:
    path = ROOT / name
    return [d.seconds for d in durations(path.read_text())] if path.is_file() else []


def unmet_claims(page: Path) -> list[str]:
    """Each claim of ``page`` that names no bench file, or states a duration its bench files do not hold."""
    problems = []
    for unit in units(page):
        stated = durations(unit)
        if not stated or (page.relative_to(ROOT).as_posix(), unit) in LEFT_FOR_ISSUE_43:
            continue
        cited = sorted(set(BENCH_FILE.findall(unit)))
        if not cited:
            problems.append(f"cites no bench/*.md file: {unit[:160]}")
            continue
        measured = [v for name in cited for v in bench_durations(name)]
        missing = [d.text for d in stated if not d.held_by(measured)]
        if missing:
            problems.append(f"{', '.join(missing)} not in {', '.join(cited)}: {unit[:160]}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_a_time_the_docs_state_is_the_one_a_bench_file_holds(page):
    assert unmet_claims(page) == []


def test_the_reader_of_claims_finds_measurements_and_leaves_settings(tmp_path):
    """The checker itself: what counts as a claim, what a bench file must hold, and what is a setting."""
    (tmp_path / "bench").mkdir()
    stated = [(d.text, d.seconds, d.bound) for d in durations(
        "took **226 s**; 4 min 27 s in all; about 5 minutes; under 30 minutes; 1,077 s; 28–30 s; a 1-minute "
        "load; SIGKILL 30 s later; a line every 30 s; `(12.3 s)`; requeue 5 min before the time limit")]
    assert stated == [("226 s", 226, ""), ("4 min 27 s", 267, ""), ("about 5 minutes", 300, "about"),
                      ("under 30 minutes", 1800, "under"), ("1,077 s", 1077, ""), ("28–30 s", 30, ""),
                      ("28–30 s", 28, "")]
    about = durations("about 7 minutes")[0]
    assert about.held_by([423]) and not about.held_by([480]) and not durations("about 8 minutes")[0].held_by([423])
    assert durations("173.4 s")[0].held_by([173.43]) and not durations("173.4 s")[0].held_by([173.5])
    page = tmp_path / "page.md"
    page.write_text("The run took 226 s.\n\nThe run took 226 s ([bench](../bench/ci_times.md)).\n\n"
                    "- a list item: 5 s\n\n| a | 2 s |\n\n```\nmake test  # 9 s\n```\n")
    assert [u for u in units(page) if durations(u)] == [
        "The run took 226 s.", "The run took 226 s ([bench](../bench/ci_times.md)).", "- a list item: 5 s",
        "| a | 2 s |", "make test  # 9 s"]
