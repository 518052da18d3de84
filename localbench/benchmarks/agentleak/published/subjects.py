"""The person a trace's request names, and whether the vault the agents saw holds them.

The harness writes the request from the first record of a scenario and flattens the three records'
fields by name, the last one winning (docs/agentleak.md, "The published traces"), so the agents are
often asked about someone whose data they were never shown, and a "leak" can be a reply saying that
it only has data on another person. A person is named in a request as a run of two or more
capitalised words ("Allison Hill"; titles such as "Dr." end a run at their full stop, suffixes such
as "MD" are not capitalised words, and the capitalised verb opening a request is left out); they are present in the vault when
two consecutive words of the run appear together in any vault value, case-insensitively.
"""

from __future__ import annotations

import re

WORD = r"(?:Mc|Mac|O')?[A-Z][a-z]+(?:-[A-Z][a-z]+)?"
PERSON = re.compile(rf"\b{WORD}(?: {WORD})+\b")


def named_people(request: str) -> list[str]:
    """Every run of two or more capitalised words in the request, in order; a run of three or more that
    opens the request loses its first word (the capitalised verb of "Summarise Bo Diaz")."""
    out = []
    for m in PERSON.finditer(request):
        words = m.group().split()
        opens = m.start() == len(request) - len(request.lstrip())
        out.append(" ".join(words[1:] if opens and len(words) > 2 else words))
    return out


def in_vault(person: str, vault: dict[str, str]) -> bool:
    """Whether two consecutive words of ``person`` appear together in some vault value."""
    words = person.lower().split()
    values = [v.lower() for v in vault.values()]
    pairs = [f"{a} {b}" for a, b in zip(words, words[1:])]
    return any(re.search(rf"\b{re.escape(p)}\b", v) for p in pairs for v in values)


def absent_people(request: str, vault: dict[str, str]) -> list[str]:
    """The people the request names whom the vault does not hold (empty: none named, or all present)."""
    return [p for p in named_people(request) if not in_vault(p, vault)]
