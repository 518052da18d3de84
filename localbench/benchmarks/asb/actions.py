"""Per-turn action schemas: what a simulated speaker may answer, as a pydantic model = a grammar.

An agent's turn is one of

- ``send``: a message to one or more recipients, taken from an enum of the participants this
  agent may address in this scenario (so an unknown or misspelt recipient cannot be produced);
- ``broadcast``: a message to every other agent of the group (graph categories);
- ``pass``: nothing this round;
- ``done``: the agent considers the task finished.

Messages have a maximum length and recipient lists a maximum size, so a reply is bounded whatever
the model does. The parsed action is used as-is; nothing is parsed out of free text. Simulated
people and the CU coordinator answer with their own small schemas.
"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from typing import Literal, Union

from pydantic import BaseModel, ConfigDict, Field, RootModel, create_model

from localbench.serving.output import OutputSpec

ActionName = Literal["send", "broadcast", "pass", "done"]
REASON_MAX_CHARS = 200


class _Action(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Pass(_Action):
    model_config = ConfigDict(extra="forbid", title="Pass")
    action: Literal["pass"]


class Done(_Action):
    model_config = ConfigDict(extra="forbid", title="Done")
    action: Literal["done"]


def _message_field(max_chars: int):
    return (str, Field(min_length=1, max_length=max_chars))


@lru_cache(maxsize=4096)
def action_spec(recipients: tuple[str, ...], actions: tuple[ActionName, ...], max_chars: int) -> OutputSpec:
    """The action schema for one speaker: the allowed actions, recipients as an enum.

    Cached by its arguments: every simulation of a scenario reuses the same spec object.
    """
    if "send" in actions and not recipients:
        raise ValueError("a 'send' action needs at least one valid recipient")
    variants: list[type[BaseModel]] = []
    if "send" in actions:
        to_type = list[Literal[recipients]]  # type: ignore[valid-type]
        variants.append(create_model(
            "Send", __base__=_Action, action=(Literal["send"], ...),
            to=(to_type, Field(min_length=1, max_length=len(recipients))),
            message=_message_field(max_chars),
        ))
    if "broadcast" in actions:
        variants.append(create_model(
            "Broadcast", __base__=_Action, action=(Literal["broadcast"], ...), message=_message_field(max_chars),
        ))
    if "pass" in actions:
        variants.append(Pass)
    if "done" in actions:
        variants.append(Done)
    if not variants:
        raise ValueError("an action schema needs at least one action")
    union = variants[0] if len(variants) == 1 else Union[tuple(variants)]  # type: ignore[valid-type]
    model = type("AgentAction", (RootModel[union],), {"model_config": ConfigDict(title="AgentAction")})
    return OutputSpec.from_model(model)


@lru_cache(maxsize=64)
def reply_spec(max_chars: int) -> OutputSpec:
    """A simulated person's reply, or an agent's final delivery to its user: one bounded message."""
    model = create_model("Reply", __base__=_Action, message=_message_field(max_chars))
    return OutputSpec.from_model(model)


class CoordinatorDecision(_Action):
    """The CU team coordinator's verdict on one outgoing message."""

    decision: Literal["approve", "redirect"]
    reason: str = Field(min_length=1, max_length=REASON_MAX_CHARS)


COORDINATOR_SPEC = OutputSpec.from_model(CoordinatorDecision)


def unwrap(parsed: object) -> BaseModel:
    """The concrete action inside a parsed AgentAction (RootModel) or the model itself."""
    return parsed.root if isinstance(parsed, RootModel) else parsed  # type: ignore[return-value]


def specs_hash(specs: list[OutputSpec]) -> str:
    """One hash over a set of schemas (order-free): what a scenario's agents were constrained by."""
    blob = json.dumps(sorted({s.schema_hash for s in specs}))
    return hashlib.sha256(blob.encode()).hexdigest()[:16]
