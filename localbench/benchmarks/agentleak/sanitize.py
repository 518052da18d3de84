"""Detection-based redaction for the defenses: what a deployed system could do, never with the vault.

The output sanitizer runs ``redact`` on the final output (C1) and the internal-channel interceptor
on inter-agent messages and memory writes (C2, C5) before they are delivered. Both see only the text:
they replace every validated identifier (``identifiers.find_identifiers``: payment cards, SSNs,
IBANs, e-mail addresses, phone numbers, routing numbers, ICD-10 codes, including those inside base64
or hex runs) and every canary-pattern token with ``[REDACTED:<kind>]``.

The one thing a defense is told about the data is the task's allow-list: the values the scenario
allows on the channel it guards (what the task must be able to say: a clinic may call back on the
phone number the user asked for). Those are never redacted, so a defense costs no task success it
need not; everything else it finds, it redacts.

The released sanitizer also replaced every ground-truth vault value, which makes its success
tautological. Here a value that no validator recognises (a vault SSN in the never-issued 9xx area, an
account number, a name, a natural-language fact) goes through, and the benchmark measures that.
"""

from __future__ import annotations

from collections.abc import Iterable

from localbench.benchmarks.agentleak.identifiers import Identifier, find_identifiers

PLACEHOLDER = "[REDACTED:{kind}]"


def redact(text: str, keep: Iterable[str] = ()) -> tuple[str, list[Identifier]]:
    """``text`` with every validated identifier and canary token replaced by ``[REDACTED:<kind>]``,
    except those that are (part of) a value in ``keep`` (the channel's allowed values), and what was
    replaced (spans in the original text), in order."""
    kept = [k for k in (_letters_digits(v) for v in keep) if k]
    found = [i for i in find_identifiers(text) if not any(_letters_digits(text[i.start:i.end]) in k for k in kept)]
    out, pos = [], 0
    for ident in found:
        out.append(text[pos:ident.start])
        out.append(PLACEHOLDER.format(kind=ident.kind))
        pos = ident.end
    out.append(text[pos:])
    return "".join(out), found


def _letters_digits(text: str) -> str:
    return "".join(c for c in text.casefold() if c.isalnum())
