"""What a vault value is: its kind, tier and category, from its field name and the value itself.

One rule serves the upstream loader and the generator (docs/fidelity.md, "AgentLeak data"):

- **tier**: a canary token (``CANARY_<TYPE>_<suffix>``) is ``canary``; a value that is valid for the
  kind its field name promises (an SSN-format number in ``ssn``, an ISO date in ``dob``, a name in
  ``name``, an amount in ``salary``) is ``identifier``, a structured value that can be matched
  verbatim; anything else (a sentence, a short label like "Asthma") is a natural-language ``fact``.
- **kind**: what the field name promises (``expected_kind``) when the value has that format; ``id``
  for a canary (it looks like a token, whatever it stands for); ``text`` otherwise.
- **mislabelled**: the field name promises a strict format (SSN, phone, e-mail, account, routing,
  card, IBAN, date, ICD-10, record number, id) and the value, not a canary and not an empty marker,
  does not have it: the release's 228 ``ssn`` fields that hold a medical sentence.
- **category**: PCI for payment account data (card, IBAN, bank account and routing numbers); PII
  for who and where someone is (names, SSNs, dates of birth, phone, e-mail, address, customer /
  client / employee / candidate ids); PHI for health information (diagnoses, medications, allergies,
  clinical notes, visit dates, medical record and insurance numbers, ICD-10 codes) and for any
  natural-language fact (a sentence) about someone's health wherever it sits; ``other`` for the rest (salaries,
  balances, scores, case strategy, HR notes, statuses). A mislabelled field takes the category of
  what it holds, not of its name.
- **generic**: an empty marker ("None", "N/A", an empty list) carries no matchable secret.

Validators use python-stdnum where a checksum exists (Luhn, SSA rules for SSNs, IBAN, ABA routing).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass

from stdnum import iban as _iban
from stdnum import luhn as _luhn
from stdnum.us import rtn as _rtn
from stdnum.us import ssn as _ssn

CANARY_RE = re.compile(r"\bCANARY_[A-Z][A-Z0-9]*(?:_[A-Z][A-Z0-9]*)*_[A-Za-z0-9]{6,32}\b")
"""A canary token anywhere in a text (multi-word types like CONF_NOTE included)."""

ICD10_RE = re.compile(r"^[A-TV-Z][0-9][0-9AB](?:\.[0-9A-TV-Z]{1,4})?$")
_SSN_RE = re.compile(r"^\d{3}-\d{2}-\d{4}$|^\d{9}$")
_EMAIL_RE = re.compile(r"^[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}$")
_PHONE_RE = re.compile(r"^\+?[\d\s().-]{7,22}$")
_ACCOUNT_RE = re.compile(r"^\d[\d -]{4,30}\d$|^[*xX•]{2,}[ -]?\d{4}$")
_MRN_RE = re.compile(r"^(?:MRN|PT|MR)[- ]?\d{5,12}$")
_ID_RE = re.compile(r"^[A-Z]{2,8}(?:[- ][A-Z0-9]+)+$")
_MONEY_RE = re.compile(r"^[$€£]?\s?\d{1,3}(?:,?\d{3})*(?:\.\d{1,2})?\s?[kKmM]?$")
_NAME_RE = re.compile(r"^[A-Z][A-Za-z.'’-]*(?:[ ,]+[A-Za-z][A-Za-z.'’-]*){0,6}$")
_SENTENCE_WORDS = 4

GENERIC_VALUES = frozenset({"", "none", "n/a", "na", "null", "unknown", "not applicable", "none disclosed", "-", "—"})

NAME_FIELDS = ("name", "patient_name", "customer_name", "client_name", "candidate_name", "employee_name",
               "full_name")
"""Fields that say whom a record is about (its subject), in order of preference."""

_HEALTH_FIELDS = frozenset({
    "diagnosis", "medications", "allergies", "chief_complaint", "assessment", "confidential_notes",
    "psychiatric_notes", "hiv_status", "medical_history", "other_medications", "full_diagnosis", "lab_results",
    "treatment", "treatment_plan", "condition", "conditions", "symptoms", "procedure", "visit_date",
    "insurance_id", "note_id", "icd10", "icd10_code", "mrn", "patient_id", "medical_record_number",
    "clinical_notes", "prescription", "prescriptions", "referral_reason", "next_appointment",
})
_PERSON_ID_FIELDS = frozenset({"customer_id", "client_id", "candidate_id", "employee_id", "person_id", "user_id"})
_HEALTH_WORDS = re.compile(
    r"\b(?:diagnos\w*|cancer|chemotherapy|HIV|hepatitis|BRCA\d?|gene mutation|bipolar|lithium|schizophreni\w*|"
    r"antipsychotic|psychiatric|opioid|addiction|alcohol dependency|surgery|prognosis|therapy|depressi\w*|"
    r"anxiety disorder|diabetes|pregnan\w*|prescribed|medication|treatment|disorder|syndrome|tumou?r|"
    r"dementia|epilepsy|HbA1c|insulin|dialysis|rehab\w*)\b", re.IGNORECASE)

STRICT_KINDS = frozenset({"ssn", "phone", "email", "account", "routing", "card", "iban", "date", "icd10", "mrn", "id"})
"""Kinds whose field name promises a format: a value without it is a mislabelled field."""
IDENTIFIER_KINDS = STRICT_KINDS | {"name", "address", "money"}


def expected_kind(field: str) -> str:
    """The kind a field's name promises (``text`` when it promises none)."""
    f = field.lower()
    if f.endswith("ssn") or f in ("social_security_number",):
        return "ssn"
    if f in ("phone", "mobile", "fax", "telephone") or f.endswith("_phone"):
        return "phone"
    if f == "email" or f.endswith("_email"):
        return "email"
    if f in ("iban",) or f.endswith("_iban"):
        return "iban"
    if f in ("card", "card_number", "credit_card", "credit_card_number", "debit_card"):
        return "card"
    if f.startswith("routing"):
        return "routing"
    if f.startswith("account_") or f in ("account", "bank_account"):
        return "account"
    if f in ("icd10", "icd10_code", "icd_10", "icd_code"):
        return "icd10"
    if f in ("mrn", "patient_id", "medical_record_number"):
        return "mrn"
    if f.endswith("_id"):
        return "id"
    if f in ("dob", "date", "date_of_birth") or f.endswith("_date"):
        return "date"
    if f in NAME_FIELDS or f.endswith("_name") or f in ("opposing_party", "attorney", "provider", "references",
                                                         "reference_names", "manager"):
        return "name"
    if f in ("address", "home_address") or f.endswith("_address"):
        return "address"
    if f in ("balance", "amount", "salary", "salaries", "bonus", "income", "net_worth") or \
            f.endswith(("_income", "_salary", "_amount", "_balance")):
        return "money"
    return "text"


def is_canary(value: str) -> bool:
    return CANARY_RE.fullmatch(value.strip()) is not None


def is_generic(value: str) -> bool:
    return value.strip().lower() in GENERIC_VALUES


def is_ssn(value: str, *, ssa: bool = False) -> bool:
    """SSN format (###-##-####); with ``ssa``, also the SSA's issuing rules (stdnum.us.ssn: no area
    000, 666 or 900-999, no group 00, no serial 0000, no known advertising numbers)."""
    if not _SSN_RE.match(value):
        return False
    return _ssn.is_valid(value) if ssa else True


def is_card(value: str) -> bool:
    digits = re.sub(r"[ -]", "", value)
    return digits.isdigit() and 13 <= len(digits) <= 19 and _luhn.is_valid(digits)


def is_iban(value: str) -> bool:
    return _iban.is_valid(value)


def is_routing(value: str, *, checksum: bool = False) -> bool:
    """Nine digits; with ``checksum``, the ABA check digit too (stdnum.us.rtn)."""
    if not re.fullmatch(r"\d{9}", value):
        return False
    return _rtn.is_valid(value) if checksum else True


def is_icd10(value: str) -> bool:
    return ICD10_RE.match(value) is not None


def is_date(value: str) -> bool:
    try:
        _dt.date.fromisoformat(value)
        return True
    except ValueError:
        return False


def is_phone(value: str) -> bool:
    return bool(_PHONE_RE.match(value)) and 7 <= sum(c.isdigit() for c in value) <= 15


def _valid_for(kind: str, value: str) -> bool:
    v = value.strip()
    return {
        "ssn": lambda: is_ssn(v),
        "phone": lambda: is_phone(v),
        "email": lambda: bool(_EMAIL_RE.match(v)),
        "account": lambda: bool(_ACCOUNT_RE.match(v)),
        "routing": lambda: is_routing(v),
        "card": lambda: is_card(v),
        "iban": lambda: is_iban(v),
        "date": lambda: is_date(v),
        "icd10": lambda: is_icd10(v),
        "mrn": lambda: bool(_MRN_RE.match(v)) or bool(_ID_RE.match(v)),
        "id": lambda: bool(_ID_RE.match(v)) or bool(re.fullmatch(r"[A-Z0-9-]{4,}", v)),
        "money": lambda: bool(_MONEY_RE.match(v)),
        "name": lambda: bool(_NAME_RE.match(v)) and len(v.split()) <= 7,
        "address": lambda: any(c.isdigit() for c in v) and len(v) >= 8,
        "text": lambda: True,
    }[kind]()


def is_sentence(value: str) -> bool:
    return len(value.split()) >= _SENTENCE_WORDS


def about_health(value: str) -> bool:
    return _HEALTH_WORDS.search(value) is not None


@dataclass(frozen=True)
class Classified:
    kind: str
    tier: str
    category: str
    generic: bool = False
    mislabelled: bool = False  # the field name promises a format the value does not have
    expected: str = "text"  # the kind the field name promises


def category_of(field: str, kind: str, value: str, tier: str) -> str:
    """PHI / PII / PCI / other (see the module docstring for the rule)."""
    if kind in ("card", "iban", "account", "routing"):
        return "PCI"
    if kind in ("mrn", "icd10"):
        return "PHI"
    if kind in ("ssn", "phone", "email", "address", "name"):
        return "PII"
    f = field.lower()
    if f in _HEALTH_FIELDS:
        return "PHI"
    if f in ("dob", "date_of_birth") or f in _PERSON_ID_FIELDS:
        return "PII"
    if tier == "fact" and is_sentence(value) and about_health(value):
        return "PHI"
    return "other"


def classify(field: str, value: str) -> Classified:
    """Kind, tier, category of one vault value (see the module docstring)."""
    expected = expected_kind(field)
    v = value.strip()
    if is_canary(v):
        cat = category_of(field, expected if expected != "text" else "id", v, "canary")
        return Classified("id", "canary", cat, expected=expected)
    if is_generic(v):
        return Classified("text", "fact", category_of(field, "text", v, "fact"), generic=True, expected=expected)
    if expected != "text" and _valid_for(expected, v):
        return Classified(expected, "identifier", category_of(field, expected, v, "identifier"), expected=expected)
    mislabelled = expected in STRICT_KINDS
    if mislabelled:  # what it holds decides its category, not its name
        return Classified("text", "fact", "PHI" if is_sentence(v) and about_health(v) else "other", mislabelled=True,
                          expected=expected)
    return Classified("text", "fact", category_of(field, "text", v, "fact"), expected=expected)
