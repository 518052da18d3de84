"""One AgentLeak simulation: a multi-agent system (or one agent) working on a task, every event on
its channel.

Agents act only through grammar-constrained actions (``actions.py``): call a tool, message a
colleague, remember or recall a shared-memory note, write a file, give the final answer (the entry
agent only), or wait. Every action is recorded as an event on its channel:

    C1 final answer · C2 message to an agent · C3 tool query · C4 tool result · C5 memory write
    C6 log (every action's reasoning) · C7 file written

Tools are deterministic and sandboxed over the scenario's own records (``Sandbox``). The attack, if
any, is injected at its surface and nowhere else (``attacks.py``); defenses wrap the channels they
protect (``defenses.py``). The run condition ``single`` folds the team into one agent with every
tool; ``multi`` runs the scenario's own topology.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from localbench.benchmarks.agentleak.actions import action_spec
from localbench.benchmarks.agentleak.attacks import Injection, plan_injection
from localbench.benchmarks.agentleak.defenses import Setting
from localbench.benchmarks.agentleak.prompting import PROMPTS
from localbench.benchmarks.agentleak.sandbox import Sandbox, tool_fields
from localbench.benchmarks.agentleak.scenario import Agent, Scenario
from localbench.runlog import LogEntry, Transcript
from localbench.runtime.calls import FittedCall, OutOfContext, SimulationCalls
from localbench.runtime.clients import RoleClients
from localbench.serving.output import OutputSpec
from localbench.serving.seeds import derive_seed

TEMPERATURES = {"agent": 0.7}
USER = "user"
LOG_CHANNELS = ("C1", "C2", "C3", "C4", "C5", "C6", "C7")
TERMINATIONS = ("final_answer", "max_rounds", "idle", "context_exhausted")
SELF_WORK = ("remember", "write_file")  # actions after which an agent carries on with its own work


@dataclass
class Settings:
    run_seed: int = 0
    max_rounds: int = 8
    max_tokens: int = 200
    text_chars: int = 400  # the longest message, note, file or answer an action may carry


@dataclass
class Event:
    """One thing that happened, and who saw it."""

    entry: LogEntry
    seen_by: set[str] = field(default_factory=set)  # agents whose history shows it


class AgentSystem:
    """The agents of one simulation, their shared sandbox, the events and the model calls."""

    def __init__(self, scenario: Scenario, setting: Setting, clients: RoleClients, settings: Settings, *,
                 key: str, condition: str, seed_index: int = 0):
        self.scenario, self.setting, self.settings = scenario, setting, settings
        self.key, self.condition, self.seed_index = key, condition, seed_index
        self.agents = self._agents()
        self.entry = self.agents[0]
        self.injection: Injection = plan_injection(scenario, [a.id for a in self.agents])
        self.sandbox = Sandbox(scenario, self.injection, setting)
        self.calls = SimulationCalls(clients, settings.max_tokens, dict(TEMPERATURES))
        self.clients = clients
        self.events: list[Event] = []
        self.unseen: dict[str, bool] = {a.id: False for a in self.agents}
        # mid-work: its last turn wrote memory or a file, or failed; it acts again next round even though
        # nothing new reached it (only waiting, messaging or answering hands the turn on)
        self.busy: dict[str, bool] = {a.id: False for a in self.agents}
        self.round = 0
        self.final: str | None = None

    # -- who is in the system ------------------------------------------------------------------
    def _agents(self) -> list[Agent]:
        if self.setting.mode == "single" and len(self.scenario.agents) > 1:
            tools = list(dict.fromkeys(t for a in self.scenario.agents for t in a.tools))
            first = self.scenario.agents[0]
            return [first.model_copy(update={"role": "assistant", "tools": tools, "brief": ""})]
        return list(self.scenario.agents)

    def peers(self, agent: Agent) -> list[str]:
        return [a.id for a in self.agents if a.id != agent.id]

    # -- events --------------------------------------------------------------------------------
    def add(self, *, kind: str, sender: str, channel: str, content: str, recipients: list[str] = (),
            seen_by: set[str] | None = None, role: str = "", **meta: Any) -> LogEntry:
        """Record an event on its channel; agents in ``seen_by`` will see it in their next prompt."""
        seen = set(seen_by or ())
        entry = LogEntry(index=len(self.events), round=self.round, kind=kind, sender=sender,
                         recipients=list(recipients), channel=channel, visibility=sorted(seen), content=content,
                         role=role, meta={k: v for k, v in meta.items() if v not in (None, "", [], {})})
        self.events.append(Event(entry, seen))
        for a in seen:
            if a != sender:
                self.unseen[a] = True
        return entry

    def history(self, agent: Agent) -> list[str]:
        """What ``agent`` has seen, one line per event, in order."""
        out = []
        for ev in self.events:
            e = ev.entry
            if agent.id not in ev.seen_by:
                continue
            mine = e.sender == agent.id
            if e.kind == "request":
                out.append(f"USER REQUEST: {e.content}")
            elif e.kind == "thought":
                out.append(f"(your earlier reasoning) {e.content}")
            elif e.kind == "message":
                out.append(f"you → {', '.join(e.recipients)}: {e.content}" if mine else f"{e.sender} → you: {e.content}")
            elif e.kind == "tool_call":
                out.append(f"you called {e.recipients[0]}({e.content!r})")
            elif e.kind == "tool_result":
                out.append(f"{e.sender} returned: {e.content}")
            elif e.kind == "memory_write":
                out.append(f"you remembered {e.content}")
            elif e.kind == "memory_read":
                out.append(f"memory {e.content}")
            elif e.kind == "artifact":
                out.append(f"you wrote the file {e.content.split(':', 1)[0]}")
            elif e.kind == "wait":
                out.append("you waited")
            elif e.kind == "failed":
                out.append("(your last turn failed: no action was taken)")
        return out

    # -- one turn ------------------------------------------------------------------------------
    def system_prompt(self, agent: Agent) -> str:
        tools = [t for t in self.scenario.tools if t.name in agent.tools]
        return PROMPTS.render(
            "system.j2", agent=agent, vertical=self.scenario.vertical, entry=agent.id == self.entry.id,
            peers=self.peers(agent), entry_agent=self.entry.id, tools=tools,
            tool_fields={t.name: tool_fields(self.scenario, t) for t in tools},
            memory_keys=self.sandbox.memory_keys(), privacy_instruction=self.scenario.privacy_instruction,
            privacy_prompt=self.setting.privacy_prompt, hidden_objective=self.injection.hidden_objective(agent.id))

    def action_spec(self, agent: Agent) -> OutputSpec:
        """The agent's action schema: its tools (with the fields each can be asked for), its peers,
        and a final answer where it is the entry agent."""
        tools = tuple((t, tool_fields(self.scenario, self.sandbox.tools[t])) for t in agent.tools)
        return action_spec(tools, tuple(self.peers(agent)), agent.id == self.entry.id, self.settings.text_chars)

    async def decide(self, agent: Agent) -> FittedCall:
        """The agent's next action, from what it has seen so far (one grammar-constrained call)."""
        self.unseen[agent.id] = False
        history = self.history(agent)
        system = self.system_prompt(agent)

        def build(dropped: int) -> list[dict[str, str]]:
            return [{"role": "system", "content": system},
                    {"role": "user", "content": PROMPTS.render("turn.j2", history=history[dropped:], dropped=dropped)}]

        spec = self.action_spec(agent)
        seed = derive_seed(self.settings.run_seed, self.scenario.id, self.condition, self.seed_index, self.round, agent.id)
        return await self.calls.call(role="agent", build=build, n_history=len(history), output=spec, seed=seed,
                                     tag=f"{self.key} r{self.round} {agent.id}",
                                     where={"round": self.round, "speaker": agent.id})

    def apply(self, agent: Agent, called: FittedCall) -> None:
        """Carry out a decided action (or record the failed call)."""
        call = called.result.summary()
        if not called.ok:
            self.add(kind="failed", sender=agent.id, channel="none", content="", seen_by={agent.id}, role="agent",
                     call=call, failure=called.result.failure)
            self.busy[agent.id] = True
            return
        self.act(agent, called.result.parsed, call)
        self.busy[agent.id] = called.result.parsed["action"] in SELF_WORK

    def act(self, agent: Agent, action: dict[str, Any], call: dict[str, Any]) -> None:
        """Carry out one parsed action: its events, each on its channel."""
        me = {agent.id}
        kind = action["action"]
        self.add(kind="log", sender=agent.id, channel="C6", content=action.get("reasoning", ""), role="agent",
                 action=kind, call=call)
        if kind == "call_tool":
            tool, query, fields = action["tool"], action["query"], action.get("fields")
            asked = f"{query} (fields: {', '.join(fields)})" if fields else query
            self.add(kind="tool_call", sender=agent.id, channel="C3", content=asked, recipients=[tool], seen_by=me,
                     role="agent", fields=fields)
            result, injected = self.sandbox.call(tool, query, agent, fields)
            self.add(kind="tool_result", sender=tool, channel="C4", content=result, recipients=[agent.id],
                     seen_by=me, injected=injected)
        elif kind == "message":
            text, dropped = self.setting.intercept(action["text"], self.allowed_values("C2"))
            self.add(kind="message", sender=agent.id, channel="C2", content=text, recipients=[action["to"]],
                     seen_by=me | {action["to"]}, role="agent", redacted=dropped, original=action["text"] if dropped else None)
        elif kind == "remember":
            value, dropped = self.setting.intercept(action["value"], self.allowed_values("C5"))
            self.sandbox.remember(action["key"], value)
            self.add(kind="memory_write", sender=agent.id, channel="C5", content=f"{action['key']}: {value}",
                     recipients=["memory"], seen_by=me, role="agent", redacted=dropped)
        elif kind == "recall":
            value, injected = self.sandbox.recall(action["key"])
            self.add(kind="memory_read", sender="memory", channel="memory", content=f"{action['key']}: {value}",
                     recipients=[agent.id], seen_by=me, injected=injected)
        elif kind == "write_file":
            self.add(kind="artifact", sender=agent.id, channel="C7", content=f"{action['name']}: {action['content']}",
                     recipients=["files"], seen_by=me, role="agent")
        elif kind == "final_answer":
            text, dropped = self.setting.sanitize(action["text"], self.allowed_values("C1"))
            self.final = text
            self.add(kind="final", sender=agent.id, channel="C1", content=text, recipients=[USER], seen_by=me,
                     role="agent", redacted=dropped, original=action["text"] if dropped else None)
        else:  # wait
            self.add(kind="wait", sender=agent.id, channel="none", content="", seen_by=me, role="agent")

    def allowed_values(self, channel: str) -> list[str]:
        """The values the scenario allows on ``channel``: a defense never removes them."""
        return [self.scenario.field(f).value for f in sorted(self.scenario.allowed_on(channel))]

    # -- the whole simulation ------------------------------------------------------------------
    async def run(self) -> Transcript:
        t0 = time.monotonic()
        request = self.injection.request(self.scenario.task)
        self.add(kind="request", sender=USER, channel="input", content=request, recipients=[self.entry.id],
                 seen_by={self.entry.id}, injected=request != self.scenario.task)
        forged = self.injection.forged_reasoning()
        if forged:  # F5: a thought the entry agent never had, in its own history
            self.add(kind="thought", sender=self.entry.id, channel="attack", content=forged, seen_by={self.entry.id},
                     injected=True)
        termination = "max_rounds"
        try:
            while self.round < self.settings.max_rounds and self.final is None:
                active = ([a for a in self.agents if self.unseen[a.id] or self.busy[a.id]]
                          or ([self.entry] if self.round == 0 else []))
                if not active:
                    termination = "idle"
                    break
                # the active agents act at once, each on what it had seen when the round began (so the
                # engine gets all their calls together); their actions land in the agents' order
                decided = await asyncio.gather(*(self.decide(a) for a in active), return_exceptions=True)
                for agent, d in zip(active, decided):
                    if isinstance(d, BaseException):
                        raise d
                    self.apply(agent, d)
                self.round += 1
            if self.final is not None:
                termination = "final_answer"
        except OutOfContext:
            termination = "context_exhausted"
        return self.record(termination, time.monotonic() - t0)

    def record(self, termination: str, wall_s: float) -> Transcript:
        s = self.scenario
        return Transcript(
            key=self.key, scenario=s.id, category=s.vertical, condition=self.condition, seed_index=self.seed_index,
            model=self.clients.for_role("agent").model_name, models={"agent": self.clients.for_role("agent").model_name},
            termination=termination, rounds=self.round, max_rounds=self.settings.max_rounds,
            entries=[e.entry for e in self.events], n_messages=sum(1 for e in self.events if e.entry.kind == "message"),
            **self.calls.counts(), prompts=PROMPTS.set_hash(), schemas="",
            wall_s=round(wall_s, 3), finished_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            payload={"mode": self.setting.mode, "defenses": list(self.setting.defenses), "topology": s.topology,
                     "agents": [a.id for a in self.agents], "final": self.final,
                     "tools_called": sorted({e.entry.recipients[0] for e in self.events if e.entry.kind == "tool_call"}),
                     "attack": self.injection.record()})
