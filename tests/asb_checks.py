"""Checks every simulation test applies to a transcript record: well-formed, schema-valid actions
(or recorded failures), visibility never violated, counts consistent, termination in bounds."""

from __future__ import annotations

import json
from typing import Any

from localbench.benchmarks.asb.actions import COORDINATOR_SPEC, action_spec, reply_spec
from localbench.benchmarks.asb.engine import TERMINATIONS
from localbench.benchmarks.asb.scenario import Scenario
from localbench.benchmarks.asb.simulate import engine_for
from localbench.runtime.log import LogEntry, check_visibility

REQUIRED = ("key", "scenario", "category", "condition", "seed_index", "termination", "rounds", "max_rounds",
            "entries", "n_messages", "n_calls", "n_failed_turns", "tokens", "context_cuts", "prompts", "model", "version")
PAYLOAD = ("mode", "subtype", "engine")  # AgentSocialBench's own fields


def transcript_problems(rec: dict[str, Any], scenario: Scenario, message_max_chars: int) -> list[str]:
    out: list[str] = [f"missing field {f}" for f in REQUIRED if f not in rec]
    out += [f"missing payload field {f}" for f in PAYLOAD if f not in rec.get("payload", {})]
    if out:
        return out
    if rec.get("error"):
        return [f"simulation error: {rec['error']}"]
    entries = rec["entries"]
    out += check_visibility(entries)
    if rec["termination"] not in TERMINATIONS:
        out.append(f"unknown termination {rec['termination']}")
    if not 0 <= rec["rounds"] <= rec["max_rounds"]:
        out.append(f"rounds {rec['rounds']} outside [0, {rec['max_rounds']}]")
    menus = engine_for(scenario).menus(scenario)
    agents = {a.id: a for a in scenario.agents}
    people = {p.id for p in scenario.people}
    reply = reply_spec(message_max_chars)
    for i, raw in enumerate(entries):
        e = LogEntry.model_validate(raw)
        where = f"entry {i} ({e.kind} by {e.sender})"
        if e.index != i:
            out.append(f"{where}: index {e.index}")
        if e.round > rec["rounds"]:
            out.append(f"{where}: round {e.round} after the last round {rec['rounds']}")
        if e.kind == "failed":
            if not (e.call and e.call["failure"]) or e.content or e.visibility:
                out.append(f"{where}: a failed turn must carry its failure and deliver nothing")
            continue
        if e.call is not None and e.call["failure"] is not None:
            out.append(f"{where}: a failed call became a {e.kind}")
        action = json.dumps(e.action) if e.action is not None else None
        try:
            if e.role == "agent" and e.channel == "delivery":
                reply.validate(action)
                assert e.recipients == [agents[e.sender].user]
            elif e.role == "agent":
                recipients, acts = menus[e.sender][e.phase]
                action_spec(recipients, acts, message_max_chars).validate(action)
                if e.kind in ("message", "held"):
                    assert e.content == e.action["message"]
                    if e.action["action"] == "send":
                        assert e.recipients == list(dict.fromkeys(e.action["to"]))
                    else:
                        assert e.channel == "group" and set(e.recipients) == set(agents) - {e.sender}
            elif e.role == "user_sim":
                reply.validate(action)
                assert e.sender in people and all(r in agents for r in e.recipients)
            elif e.role == "coordinator":
                COORDINATOR_SPEC.validate(action)
            elif e.kind != "system":
                raise AssertionError(f"unexpected role '{e.role}'")
        except Exception as exc:  # noqa: BLE001 - collect every problem
            out.append(f"{where}: {type(exc).__name__}: {exc}")
    calls = [e for e in entries if e.get("call")]
    if rec["n_calls"] != len(calls):
        out.append(f"n_calls {rec['n_calls']} != {len(calls)} entries with a call")
    if rec["n_failed_turns"] != sum(1 for e in entries if e["kind"] == "failed"):
        out.append("n_failed_turns does not match the failed entries")
    if rec["n_messages"] != sum(1 for e in entries if e["kind"] == "message"):
        out.append("n_messages does not match the message entries")
    if rec["tokens"]["out"] != sum(e["call"]["tokens_out"] for e in calls):
        out.append("tokens out do not add up")
    return out
