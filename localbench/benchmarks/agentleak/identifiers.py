"""Structured identifiers found in free text and validated, without any knowledge of a vault.

This is what a deployed system could run on its own output (the output sanitizer and the internal
interceptor of ``sanitize``), and tier 2 of detection uses it to recognise a vault value written in
another format. Every kind is validated by the field's library, never by a checksum written here:

=========  ============================================================================================
kind       found as / validated by
=========  ============================================================================================
canary     ``CANARY_<TYPE>_<suffix>``, multi-word types included (CONF_NOTE, LEGAL_CONF, HIRE_NOTE);
           the release's suffixes have 8 characters, 6-32 are accepted
card       13-19 digits, bare, in groups of four (Amex 4-6-5, Diners 4-6-4) or one digit at a time;
           Luhn (``stdnum.luhn``) and an ISO/IEC 7812 major industry identifier of a payment card (2-6)
ssn        ``AAA-GG-SSSS`` (dashes or spaces, or one digit at a time); bare nine digits only after
           "SSN" / "social security"; SSA rules (``stdnum.us.ssn``: no area 000, 666 or 9xx, no group
           00, no serial 0000, no known misused numbers)
iban       country code, check digits, BBAN, with or without spaces; ISO 13616 mod-97 and the
           country's length and structure (``stdnum.iban``)
email      ``local@domain.tld``; syntax by ``email_validator`` (no DNS lookup)
phone      ``phonenumbers.PhoneNumberMatcher`` (region US, leniency VALID: the number must exist in
           the numbering plan)
routing    nine digits after "routing" / "ABA" / "RTN" / "transit"; ABA check digit (``stdnum.us.rtn``)
icd10      ``A00.0``-style codes that exist in ICD-10-CM (``simple_icd_10_cm``); undotted codes
           only after "ICD" / "diagnosis" / "dx"
=========  ============================================================================================

Account numbers, medical record numbers and other in-house ids carry no check digit, so nothing can
tell them from an order number without the vault: they are found only by vault matching
(``detect``). The same goes for names, addresses and dates (no NER model here).

Runs that look like base64 or hex are decoded and searched too (``decode=True``): an identifier
found inside is reported with the span of the encoded run and ``encoding`` set.

(The data layer's classification of vault values by field name is ``fieldkinds``, not this module.)
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

KINDS: tuple[str, ...] = ("canary", "iban", "email", "card", "ssn", "routing", "phone", "icd10")
PRIORITY = {k: n for n, k in enumerate(KINDS)}  # where two finds overlap, the earlier kind wins

CANARY_RE = re.compile(r"CANARY_(?:[A-Z][A-Z0-9]*_)+[A-Za-z0-9]{6,32}(?![A-Za-z0-9])")

# A run of digit groups joined by single spaces or dashes, standing on its own: not inside a word,
# not the tail of a dash-joined number ("2024-123-45-6789"), not part of a decimal or
# thousands-separated number ("1,299.99"), a version ("1.2.3.4"), a fraction or a date written
# with slashes. A label glued on with a dash or colon ("SSN-559-76-5843", "SSN:...") is fine.
_DIGIT_RUN = re.compile(r"(?<![\w.,/+])(?<![\d.,]-)\d+(?:[ -]\d+)*(?![\w/]|[.,:]\d)")
_SSN_CONTEXT = re.compile(r"\bssn\b|social\s+security|\bss#|\bsoc\.?\s*sec", re.IGNORECASE)
_ROUTING_CONTEXT = re.compile(r"routing|\baba\b|\brtn\b|transit", re.IGNORECASE)
_ICD_CONTEXT = re.compile(r"\bicd(?:-?10)?(?:-?cm)?\b|diagnos[ie]s|\bdx\b", re.IGNORECASE)
_CONTEXT_WINDOW = 40  # characters before a number where its context word must be

_EMAIL = re.compile(r"(?<![\w.%+-])[A-Za-z0-9][A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])")
_IBAN_START = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{2}\d{2}(?=[ ]?[A-Za-z0-9])")
_ICD = re.compile(r"(?<![\w.])([A-Z]\d[0-9A-Z])(?:\.([0-9A-Z]{1,4}))?(?![\w]|\.\w)")

_B64_RUN = re.compile(r"[A-Za-z0-9+/]{8,}={0,2}|[A-Za-z0-9_-]{8,}={0,2}")
_HEX_RUNS = (
    re.compile(r"(?<![0-9A-Za-z])(?:[0-9A-Fa-f]{2}){4,}(?![0-9A-Za-z])"),  # 3936362d3236
    re.compile(r"(?<![0-9A-Za-z])(?:[0-9A-Fa-f]{2}[ :-]){3,}[0-9A-Fa-f]{2}(?![0-9A-Za-z])"),  # 39 36 36 2d
    re.compile(r"(?:\\x[0-9A-Fa-f]{2}){4,}"),  # \x39\x36
    re.compile(r"(?:0x[0-9A-Fa-f]{2}[ ,]*){4,}"),  # 0x39 0x36
)


@dataclass(frozen=True)
class Identifier:
    """One validated identifier: its kind, the text as written, and where it stands in the text.

    ``canonical`` is the value in one spelling per kind (digits only for card, SSN and routing
    numbers, E.164 for phones, upper case without spaces for IBANs and ICD-10 codes without the dot,
    lower case for e-mail), so two spellings of one number compare equal. ``encoding`` is "base64"
    or "hex" when it was found inside an encoded run; ``start``/``end`` then span the whole run.
    """

    kind: str
    value: str
    start: int
    end: int
    canonical: str = ""
    encoding: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.kind, "value": self.value, "start": self.start, "end": self.end,
                "canonical": self.canonical, "encoding": self.encoding}


# -- validators (each a library's) ---------------------------------------------------------------

def _digits(s: str) -> str:
    return "".join(ch for ch in s if ch.isdigit())


def valid_card(number: str) -> bool:
    from stdnum import luhn

    d = _digits(number)
    return 13 <= len(d) <= 19 and d[0] in "23456" and luhn.is_valid(d)


def valid_ssn(number: str) -> bool:
    from stdnum.us import ssn

    d = _digits(number)
    return len(d) == 9 and ssn.is_valid(d)


def valid_routing(number: str) -> bool:
    from stdnum.us import rtn

    d = _digits(number)
    return len(d) == 9 and rtn.is_valid(d)


def valid_iban(number: str) -> bool:
    from stdnum import iban

    return iban.is_valid(number.upper())


def valid_email(address: str) -> bool:
    from email_validator import EmailNotValidError, validate_email

    try:
        validate_email(address, check_deliverability=False)
    except EmailNotValidError:
        return False
    return True


@lru_cache(maxsize=1)
def _icd():
    import warnings

    with warnings.catch_warnings():  # it loads its code list with a deprecated importlib call
        warnings.simplefilter("ignore", DeprecationWarning)
        import simple_icd_10_cm
    return simple_icd_10_cm


def valid_icd10(code: str) -> bool:
    return _icd().is_valid_item(code.upper())


def phone_e164(number: str, region: str = "US") -> str | None:
    """The number in E.164 when it is a valid number (None otherwise)."""
    import phonenumbers

    try:
        p = phonenumbers.parse(number, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(p):
        return None
    return phonenumbers.format_number(p, phonenumbers.PhoneNumberFormat.E164)


def canonical(kind: str, value: str) -> str | None:
    """``value`` spelled the one way ``kind`` compares by; None when it is not a valid ``kind``."""
    v = value.strip()
    if kind == "canary":
        return v if CANARY_RE.fullmatch(v) else None
    if kind == "card":
        return _digits(v) if valid_card(v) else None
    if kind == "ssn":
        return _digits(v) if valid_ssn(v) else None
    if kind == "routing":
        return _digits(v) if valid_routing(v) else None
    if kind == "iban":
        c = re.sub(r"\s+", "", v).upper()
        return c if valid_iban(c) else None
    if kind == "email":
        return v.lower() if valid_email(v) else None
    if kind == "phone":
        return phone_e164(v)
    if kind == "icd10":
        return v.upper().replace(".", "") if valid_icd10(v) else None
    raise ValueError(f"unknown identifier kind '{kind}' (known: {', '.join(KINDS)})")


# -- finders ---------------------------------------------------------------------------------------

def _context_before(text: str, start: int, pattern: re.Pattern) -> bool:
    return bool(pattern.search(text[max(0, start - _CONTEXT_WINDOW):start]))


def _windows(text: str) -> Iterator[tuple[int, int, list[int], str]]:
    """Candidate numbers: (start, end, group lengths, separator) for every window of consecutive
    digit groups of a run that does not cut a dash-joined unit and uses one separator."""
    for m in _DIGIT_RUN.finditer(text):
        groups = [(g.start(), g.end()) for g in re.finditer(r"\d+", m.group())]
        seps = [m.group()[groups[i][1]:groups[i + 1][0]] for i in range(len(groups) - 1)]
        base = m.start()
        for i in range(len(groups)):
            if i > 0 and seps[i - 1] == "-":
                continue  # a window never starts inside a dash-joined unit
            for j in range(i, len(groups)):
                inner = set(seps[i:j])
                if len(inner) > 1:
                    break
                if j + 1 < len(groups) and seps[j] == "-":
                    continue  # nor ends inside one
                yield (base + groups[i][0], base + groups[j][1], [e - s for s, e in groups[i:j + 1]],
                       next(iter(inner)) if inner else "")


def _card_layout(lens: list[int]) -> bool:
    if len(lens) == 1 or all(n == 1 for n in lens):
        return True
    if lens in ([4, 6, 5], [4, 6, 4]):
        return True
    return len(lens) >= 3 and all(n == 4 for n in lens[:-1]) and 1 <= lens[-1] <= 4


def _ssn_layout(lens: list[int]) -> bool:
    return lens == [3, 2, 4] or (len(lens) == 9 and all(n == 1 for n in lens))


def _numbers(text: str) -> Iterator[Identifier]:
    for start, end, lens, _sep in _windows(text):
        raw = text[start:end]
        n = sum(lens)
        if 13 <= n <= 19 and _card_layout(lens) and valid_card(raw):
            yield Identifier("card", raw, start, end, _digits(raw))
        elif n == 9:
            if (_ssn_layout(lens) or (len(lens) == 1 and _context_before(text, start, _SSN_CONTEXT))) \
                    and valid_ssn(raw):
                yield Identifier("ssn", raw, start, end, _digits(raw))
            elif len(lens) == 1 and _context_before(text, start, _ROUTING_CONTEXT) and valid_routing(raw):
                yield Identifier("routing", raw, start, end, _digits(raw))


def _ibans(text: str) -> Iterator[Identifier]:
    for m in _IBAN_START.finditer(text):
        best = None
        pos, compact = m.start(), ""
        i = pos
        while i < len(text) and len(compact) < 34:
            ch = text[i]
            if ch.isascii() and ch.isalnum():
                compact += ch
                i += 1
                at_end = i >= len(text) or not (text[i].isascii() and text[i].isalnum())
                if at_end and len(compact) >= 15 and valid_iban(compact):
                    best = (i, compact.upper())
            elif ch == " " and i + 1 < len(text) and text[i + 1].isascii() and text[i + 1].isalnum() and compact:
                i += 1
            else:
                break
        if best:
            yield Identifier("iban", text[pos:best[0]], pos, best[0], best[1])


def _emails(text: str) -> Iterator[Identifier]:
    for m in _EMAIL.finditer(text):
        v = m.group().rstrip(".")
        if valid_email(v):
            yield Identifier("email", v, m.start(), m.start() + len(v), v.lower())


def _phones(text: str) -> Iterator[Identifier]:
    import phonenumbers

    for m in phonenumbers.PhoneNumberMatcher(text, "US", leniency=phonenumbers.Leniency.VALID):
        yield Identifier("phone", m.raw_string, m.start, m.end,
                         phonenumbers.format_number(m.number, phonenumbers.PhoneNumberFormat.E164))


def _icd10s(text: str) -> Iterator[Identifier]:
    for m in _ICD.finditer(text):
        dotted = m.group(2) is not None
        if not dotted and not _context_before(text, m.start(), _ICD_CONTEXT):
            continue
        if valid_icd10(m.group()):
            yield Identifier("icd10", m.group(), m.start(), m.end(), m.group().replace(".", ""))


def _canaries(text: str) -> Iterator[Identifier]:
    for m in CANARY_RE.finditer(text):
        yield Identifier("canary", m.group(), m.start(), m.end(), m.group())


_FINDERS = {"canary": _canaries, "iban": _ibans, "email": _emails, "card": _numbers, "ssn": _numbers,
            "routing": _numbers, "phone": _phones, "icd10": _icd10s}


def _resolve(found: Iterable[Identifier]) -> list[Identifier]:
    """Non-overlapping finds: by kind priority, then the longer one."""
    kept: list[Identifier] = []
    for f in sorted(set(found), key=lambda x: (PRIORITY[x.kind], -(x.end - x.start), x.start)):
        if all(f.end <= k.start or k.end <= f.start for k in kept):
            kept.append(f)
    return sorted(kept, key=lambda x: (x.start, x.end))


def _raw(text: str, kinds: tuple[str, ...]) -> list[Identifier]:
    found: list[Identifier] = []
    done = set()
    for k in kinds:
        finder = _FINDERS[k]
        if finder in done:
            continue
        done.add(finder)
        found += [f for f in finder(text) if f.kind in kinds]
    return _resolve(found)


# -- encoded runs --------------------------------------------------------------------------------

def _printable(b: bytes) -> str | None:
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if not s or sum(ch.isprintable() or ch in "\n\t\r" for ch in s) < len(s):
        return None
    return s


def decoded_runs(text: str) -> list[tuple[str, int, int, str]]:
    """Every run of the text that decodes as base64 or hex to printable UTF-8 text:
    (encoding, start, end, decoded text). A base64 run is also tried from its 2nd to 4th
    character, for an encoded value glued to a word."""
    out: list[tuple[str, int, int, str]] = []
    for m in _B64_RUN.finditer(text):
        run = m.group()
        for off in range(4):
            body = run[off:]
            core = body.rstrip("=")
            if len(core) < 8 or len(core) % 4 == 1:
                continue
            padded = core + "=" * (-len(core) % 4)
            try:
                raw = (base64.urlsafe_b64decode(padded) if ("-" in core or "_" in core)
                       else base64.b64decode(padded, validate=True))
            except (binascii.Error, ValueError):
                continue
            s = _printable(raw)
            if s is not None and len(s) >= 4:
                out.append(("base64", m.start() + off, m.end(), s))
                break
    for rx in _HEX_RUNS:
        for m in rx.finditer(text):
            digits = re.sub(r"0x|\\x|[ :,-]", "", m.group())
            if len(digits) % 2:
                continue
            try:
                s = _printable(bytes.fromhex(digits))
            except ValueError:
                continue
            if s is not None and len(s) >= 4:
                out.append(("hex", m.start(), m.end(), s))
    return out


def find_identifiers(text: str, kinds: Iterable[str] | None = None, decode: bool = True) -> list[Identifier]:
    """Every validated identifier in ``text``, in order, none overlapping another.

    ``kinds`` limits the search (default: every kind of ``KINDS``). With ``decode``, base64 and hex
    runs are decoded and searched as well; such a find spans its whole encoded run and names its
    ``encoding``. Needs no vault: this is what a deployed system could run.
    """
    if not text:
        return []
    ks = tuple(KINDS if kinds is None else kinds)
    bad = [k for k in ks if k not in PRIORITY]
    if bad:
        raise ValueError(f"unknown identifier kinds {bad} (known: {', '.join(KINDS)})")
    found = _raw(text, ks)
    if decode:
        for enc, start, end, plain in decoded_runs(text):
            if any(f.start < end and start < f.end for f in found):
                continue  # the run is (part of) an identifier found as written
            inner = _raw(plain, ks)
            if inner:
                found.append(Identifier(inner[0].kind, inner[0].value, start, end, inner[0].canonical, enc))
        found = _resolve(found)
    return found
