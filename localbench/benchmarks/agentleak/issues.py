"""What loading AgentLeak scenarios can report: a hard error (ScenarioError) or a warning (LoadIssue).

Both name the file, the line (JSONL sources: one scenario per line) and the field. A ScenarioError
means the record cannot be used at all; a LoadIssue means it loaded but something in it is wrong in
the source and was handled in a stated way. A LoadIssue also carries a ``code`` (placeholder_request,
absent_subject, mislabelled_field, ...) so that `localbench data check` can count each kind.
"""

from __future__ import annotations

from localbench.scenario_files import LoadIssue, ScenarioError, where

__all__ = ["ISSUE_CODES", "LoadIssue", "ScenarioError", "where"]

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
    "weight_clamped": "a sensitivity weight outside 1-5, clamped into it",
    "weight_rounded": "a fractional sensitivity weight, rounded half up to a whole number",
    "defaulted": "a missing value the loader fills in with a stated default",
    "dropped": "a value the loader leaves out (a duplicate)",
    "unknown_enum": "a value outside the names the format knows (difficulty, canary tier), kept as metadata only",
    "dangling_canary": "an evaluation canary that is in no field of the vault",
    "allowed_absent": "an allowed field name that no record of the vault has",
}
