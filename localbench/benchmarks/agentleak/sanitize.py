"""Detection-based redaction for the defenses: what a deployed system could do, never with the vault.

The output sanitizer runs ``redact`` on the final output (C1) and the internal-channel interceptor
on inter-agent messages and memory writes (C2, C5) before they are delivered. Both see only the text:
they replace every validated identifier (``identifiers.find_identifiers``: payment cards, SSNs,
IBANs, e-mail addresses, phone numbers, routing numbers, ICD-10 codes, including those inside base64
or hex runs) and every canary-pattern token with ``[REDACTED:<kind>]``.

The released sanitizer also replaced every ground-truth vault value, which makes its success
tautological. Here a value that no validator recognises (a vault SSN in the never-issued 9xx area, an
account number, a name, a natural-language fact) goes through, and the benchmark measures that.
"""

from __future__ import annotations

from localbench.benchmarks.agentleak.identifiers import Identifier, find_identifiers

PLACEHOLDER = "[REDACTED:{kind}]"


def redact(text: str) -> tuple[str, list[Identifier]]:
    """``text`` with every validated identifier and canary token replaced by ``[REDACTED:<kind>]``,
    and what was replaced (spans in the original text), in order."""
    found = find_identifiers(text)
    out, pos = [], 0
    for ident in found:
        out.append(text[pos:ident.start])
        out.append(PLACEHOLDER.format(kind=ident.kind))
        pos = ident.end
    out.append(text[pos:])
    return "".join(out), found
