"""The one place the published-traces study touches AgentLeak's own code (its Tier 1-2 detectors).

An imported trace's flat vault (field name → value) becomes a one-record ``Scenario`` whose
allowed set is the one the definition in use gives, and each channel message is scanned with
``detect.scan``. Everything else of the study works on the plain ``FieldHit`` records returned
here, so a change to the detectors' signatures is fixed in this module alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from localbench.benchmarks.agentleak.detect import is_canary, scan
from localbench.benchmarks.agentleak.scenario import CHANNELS, Agent, Record, Scenario, VaultField
from localbench.benchmarks.agentleak.upstream import FAMILY_OF_CLASS

RECORD = "r1"

# what the harness's flat field names look like, for the identifier tier (everything else is text)
KIND_OF_NAME: dict[str, str] = {"ssn": "ssn", "phone": "phone", "credit_card": "card", "email": "email",
                                "account_number": "account", "iban": "iban", "routing_number": "routing"}


@dataclass(frozen=True)
class FieldHit:
    """A vault field found in one message: by which tier and how, and whether it counts there."""

    field: str  # the harness's field name
    tier: int  # 1 canary, 2 identifier or robust vault match
    how: str  # canary | exact | identifier:<kind> | normalised | base64 | hex
    counted: bool  # outside the allowed set of the definition the scenario was built for
    canary: bool  # the field's value is a canary token


def _kind(name: str) -> str:
    base = name[:-5] if name.endswith("_real") else name
    return KIND_OF_NAME.get(base, "text")


def trace_scenario(scenario_id: str, vertical: str, vault: dict[str, str], allowed: set[str]) -> Scenario:
    """A one-record scenario holding ``vault``, every field outside ``allowed`` forbidden on every channel."""
    fields = []
    for name, value in vault.items():
        fields.append(VaultField(id=f"{RECORD}.{name}", record=RECORD, field=name, value=value,
                                 kind=_kind(name), tier="fact"))  # type: ignore[arg-type]
    fields = [f.model_copy(update={"tier": "canary"}) if is_canary(f) else f for f in fields]
    ok = [f"{RECORD}.{n}" for n in vault if n in allowed]
    return Scenario(id=scenario_id.replace("/", "_") or "trace", vertical=vertical, task="", topology="pair",  # type: ignore[arg-type]
                    agents=[Agent(id="coordinator", role="coordinator"), Agent(id="worker", role="worker")],
                    records=[Record(id=RECORD, type="record", subject=RECORD)], vault=fields,
                    allowed={c: ok for c in CHANNELS})  # type: ignore[misc]


def scan_message(text: str, scenario: Scenario, channel: str) -> list[FieldHit]:
    """Tiers 1-2 over one message: every vault field found, counted or not."""
    result = scan(text, scenario, channel)
    out = []
    for counted, found in ((True, result.detections), (False, result.allowed)):
        for d in found:
            name = d.field.split(".", 1)[1]
            out.append(FieldHit(name, d.tier, d.how, counted, is_canary(scenario.field(d.field))))
    return sorted(out, key=lambda h: h.field)


def family_of_class(attack_class: str | None) -> str | None:
    """The attack family (F1-F6) of an attack class by the AgentLeak taxonomy; None for none or an unknown class."""
    return FAMILY_OF_CLASS.get(attack_class) if attack_class else None
