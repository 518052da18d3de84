"""The conversation log of one simulation, with per-participant visibility.

Every model turn leaves one entry: a delivered message, a system broadcast, a pass, a done signal,
a message held back by a gate, a gate's approval, or a failed turn. Only delivered entries (``message``, ``system``,
``coordinator``) and, for its sender alone, a ``held`` message ever reach a prompt, and a participant sees only

- what it sent itself (delivered, or held back so that it knows the message did not go out),
- what was addressed to it (it is among ``recipients``),
- system broadcasts (channel ``system``, no recipients).

``visibility`` is computed once, when the entry is added, and stored with it, so a transcript can
be checked afterwards: every turn records the indices of the entries its prompt contained
(``seen``), and each of those entries must list the speaker in its ``visibility``.
"""

from __future__ import annotations

from typing import Any, Iterable, Literal

from localbench.runlog import LogEntry

Kind = Literal["message", "system", "coordinator", "pass", "done", "held", "gate", "failed"]
Channel = Literal["direct", "group", "system", "delivery", "coordinator", "none"]
"""The kinds and channels this log knows (records.LogEntry stores any string, so other
simulators' logs fit the same transcript schema)."""

DELIVERED: frozenset[str] = frozenset({"message", "system", "coordinator"})
"""Entry kinds that are delivered to someone; the others are records of a turn, shown to nobody
(except ``held``, which its own sender sees so that it knows its message did not go out)."""

SHOWN: frozenset[str] = DELIVERED | {"held"}
"""Entry kinds that may appear in a prompt (``held`` only in its sender's)."""

SYSTEM = "system"


class VisibilityError(ValueError):
    """An entry addressed to someone who is not a participant of this log."""


class ConversationLog:
    """Append-only log of one simulation; answers "what may X see?"."""

    def __init__(self, participants: Iterable[str]):
        self.participants: list[str] = list(dict.fromkeys(participants))
        self._known = set(self.participants)
        self.entries: list[LogEntry] = []

    # -- writing -------------------------------------------------------------------------------
    def _visibility(self, kind: str, sender: str, recipients: list[str], channel: str) -> list[str]:
        if kind == "system" or (kind in DELIVERED and channel == "system"):
            return sorted(self._known)
        if kind in DELIVERED:
            return sorted({sender, *recipients} & (self._known | {sender}))
        if kind == "held":
            return [sender]
        return []

    def add(
        self,
        *,
        round: int,
        kind: Kind,
        sender: str,
        recipients: Iterable[str] = (),
        channel: Channel = "none",
        content: str = "",
        **fields: Any,
    ) -> LogEntry:
        """Append one entry; recipients must be participants (the action grammar guarantees it)."""
        rec = list(dict.fromkeys(r for r in recipients if r != sender))
        unknown = [r for r in rec if r not in self._known]
        if unknown:
            raise VisibilityError(f"unknown recipient(s) {unknown}; participants are {self.participants}")
        if kind in ("message", "coordinator") and not rec:
            raise VisibilityError(f"a {kind} entry from '{sender}' needs at least one recipient")
        entry = LogEntry(
            index=len(self.entries), round=round, kind=kind, sender=sender, recipients=rec,
            channel=channel, visibility=self._visibility(kind, sender, rec, channel),
            content=content, **fields,
        )
        self.entries.append(entry)
        return entry

    def system(self, round: int, content: str, **fields: Any) -> LogEntry:
        """A broadcast every participant sees (phase changes, announcements)."""
        return self.add(round=round, kind="system", sender=SYSTEM, channel="system", content=content, **fields)

    # -- reading -------------------------------------------------------------------------------
    def visible_to(self, participant: str) -> list[LogEntry]:
        """Entries this participant may see, oldest first (what its prompt may show)."""
        return [e for e in self.entries if e.kind in SHOWN and participant in e.visibility]

    def delivered(self) -> list[LogEntry]:
        return [e for e in self.entries if e.kind == "message"]

    def messages_sent_by(self, sender: str) -> int:
        return sum(1 for e in self.entries if e.kind == "message" and e.sender == sender)

    def to_records(self) -> list[dict[str, Any]]:
        return [e.model_dump() for e in self.entries]


def may_see(entry: dict[str, Any] | LogEntry, participant: str) -> bool:
    """The visibility rule, re-derived from an entry's own fields (for checking transcripts)."""
    e = entry.model_dump() if isinstance(entry, LogEntry) else entry
    if e["kind"] == "held":
        return participant == e["sender"]
    if e["kind"] not in DELIVERED:
        return False
    if e["channel"] == "system" or e["kind"] == "system":
        return True
    return participant == e["sender"] or participant in e["recipients"]


def viewer_of(entry: dict[str, Any]) -> str:
    """Whose view a turn's prompt was built from: its sender, unless it spoke on someone's behalf
    (a team coordinator reviews a proposal with the proposing agent's view)."""
    return (entry.get("meta") or {}).get("viewer") or entry["sender"]


def check_visibility(entries: list[dict[str, Any]]) -> list[str]:
    """Every violation in a transcript's entries: a prompt that contained an entry its speaker
    could not see, or a stored visibility that disagrees with sender/recipients/channel."""
    problems: list[str] = []
    by_index = {e["index"]: e for e in entries}
    for e in entries:
        if e["kind"] in DELIVERED and e["kind"] != "system" and e["channel"] != "system":
            expected = sorted({e["sender"], *e["recipients"]})
            if sorted(e["visibility"]) != expected:
                problems.append(f"entry {e['index']}: visibility {e['visibility']} != sender+recipients {expected}")
        for i in e.get("seen") or []:
            seen = by_index.get(i)
            if seen is None:
                problems.append(f"entry {e['index']}: saw unknown entry {i}")
            elif i >= e["index"]:
                problems.append(f"entry {e['index']}: saw a later entry {i}")
            elif not may_see(seen, viewer_of(e)):
                problems.append(f"entry {e['index']} by {viewer_of(e)}: saw entry {i} it may not see")
    return problems
