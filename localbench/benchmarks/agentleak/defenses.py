"""The run condition: ``single`` or ``multi``, and the defenses joined to it with ``+``.

- ``prompt``: data-minimisation rules in every agent's system prompt;
- ``roles``: role separation: tools return only the fields the task needs (``Sandbox``);
- ``sanitizer``: the final answer (C1) with identifiers and canary-like tokens redacted;
- ``interceptor``: the same redaction on inter-agent messages (C2) and memory writes (C5), before
  they are delivered or stored.

Redaction uses only what a deployed system could know: validated identifier formats and canary
patterns (``sanitize.redact``), and the task's allow-list (the values allowed on the channel, which
are never removed); never the forbidden part of the vault.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from localbench.benchmarks.agentleak.design import DEFENSES, MODES


class SettingError(ValueError):
    pass


@dataclass(frozen=True)
class Setting:
    mode: str  # single | multi
    defenses: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> "Setting":
        mode, *defenses = text.split("+")
        if mode not in MODES:
            raise SettingError(f"unknown setting '{text}': it starts with {' or '.join(MODES)}")
        unknown = [d for d in defenses if d not in DEFENSES]
        if unknown:
            raise SettingError(f"unknown defense '{unknown[0]}' in '{text}' (defenses: {', '.join(DEFENSES)})")
        return cls(mode, tuple(dict.fromkeys(defenses)))

    @property
    def privacy_prompt(self) -> bool:
        return "prompt" in self.defenses

    @property
    def role_separation(self) -> bool:
        return "roles" in self.defenses

    def _redact(self, text: str, on: bool, keep: Iterable[str]) -> tuple[str, list[str]]:
        if not on:
            return text, []
        from localbench.benchmarks.agentleak.sanitize import redact

        clean, found = redact(text, keep)
        return clean, [i.kind for i in found]

    def sanitize(self, text: str, keep: Iterable[str] = ()) -> tuple[str, list[str]]:
        """The final answer as the user receives it (``keep``: the values the task may state there)."""
        return self._redact(text, "sanitizer" in self.defenses, keep)

    def intercept(self, text: str, keep: Iterable[str] = ()) -> tuple[str, list[str]]:
        """An inter-agent message or memory write as it is delivered or stored (``keep``: the values
        allowed on its channel)."""
        return self._redact(text, "interceptor" in self.defenses, keep)
