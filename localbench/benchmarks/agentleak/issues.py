"""What loading AgentLeak scenarios can report: a hard error (ScenarioError) or a warning (LoadIssue).

Both name the file, the line (JSONL sources: one scenario per line) and the field. A ScenarioError
means the record cannot be used at all; a LoadIssue means it loaded but something in it is wrong in
the source and was handled in a stated way. A LoadIssue also carries a ``code`` (placeholder_request,
absent_subject, mislabelled_field, ...) so that `localbench data check` can count each kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from localbench.errors import UserError


def where(file: str, line: int | None, field: str | None) -> str:
    loc = f"{file}:{line}" if line is not None else str(file)
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
    code: str = ""  # the kind of issue, for counting (see ISSUE_CODES)

    def __str__(self) -> str:
        return f"{where(self.file, self.line, self.field)}: {self.message}"


ISSUE_CODES: dict[str, str] = {
    "placeholder_request": "the request names a placeholder (Patient X, Customer X, Client X, DISP-000000, "
                           "CASE-000, ****0000) instead of anyone in the vault",
    "absent_subject": "the request is about someone (or a case, dispute, account) the vault does not hold",
    "mislabelled_field": "a field whose name promises a format (an SSN, a phone number...) holds something else",
    "forbidden_absent": "a forbidden field name that no record of the vault has",
    "family_label": "the attack's family label disagrees with the family of its class in the AgentLeak taxonomy",
    "request_quotes_canary": "the user's request itself contains a canary of the vault",
    "payload_quotes_vault": "the attack payload itself contains a value of the vault",
    "payload_off_vertical": "the attack payload is about 'the patient' in a non-healthcare scenario",
    "attack_without_target": "an attacked scenario whose forbidden fields are absent from the vault",
    "lint": "a localbench-format scenario that validates but will not run or score as its author expects",
    "skipped_file": "a file in a directory source that holds no AgentLeak scenarios",
}
