"""What loading scenario files can report: a hard error (ScenarioError) or a warning (LoadIssue).

A ScenarioError means the file cannot be used at all (bad JSON, a missing or mistyped required
field, a graph edge naming nobody); a LoadIssue means the file loaded but something in it could not
be resolved and was handled in a stated way. Both name the file and the field.
"""

from __future__ import annotations

from dataclasses import dataclass

from localbench.errors import UserError


class ScenarioError(UserError, ValueError):
    """A scenario file that cannot be loaded; the message names the file and the field."""

    def __init__(self, file: str, field: str | None, message: str):
        self.file = str(file)
        self.field = field
        self.detail = message
        where = f"{self.file}: field '{field}'" if field else self.file
        super().__init__(f"{where}: {message}")


@dataclass(frozen=True)
class LoadIssue:
    """Something in a file that loaded but could not be fully resolved, and what was done instead."""

    file: str
    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.file}: field '{self.field}': {self.message}"
