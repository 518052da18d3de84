"""The dyadic engine: cross-domain (CD), mediated communication (MC), cross-user (CU).

- CD: one user's domain agents talk agent-to-agent. When every agent chooses ``done`` in the same
  round (and at least MIN_MESSAGES_FOR_DONE agent messages exist), they have reached consensus
  and each writes a final message to the user; then the run ends.
- MC: each round the other person (user simulator) speaks first, then the user's agent acts;
  ``done`` from the agent ends the run.
- CU: two users' agent teams coordinate agent-to-agent. Every message that crosses to the other
  side is first reviewed by the sender's team coordinator (approve: delivered; redirect: held
  back and the reason goes to the sender; after CU_MAX_REDIRECTS redirects a side's messages are
  approved without a call). The agent phase lasts at most ``max_rounds - CU_USER_EXCHANGES``
  rounds, or until all agents choose ``done`` together; then each user's agent reports to its
  user, who answers, for up to CU_USER_EXCHANGES exchanges each.

Every engine also stops after a round in which nothing was delivered (``idle``), and at the
round limit (``max_rounds``).
"""

from __future__ import annotations

from typing import Any

from localbench.benchmarks.asb.actions import COORDINATOR_SPEC, reply_spec
from localbench.benchmarks.asb.engine import (CU_MAX_REDIRECTS, CU_USER_EXCHANGES, MIN_MESSAGES_FOR_DONE, Menu,
                                              Simulation, counterpart_of, menu)
from localbench.benchmarks.asb.scenario import Scenario
from localbench.benchmarks.asb.prompting import render
from localbench.runtime.log import LogEntry


class DyadicSimulation(Simulation):
    engine = "dyadic"

    @classmethod
    def menus(cls, scenario: Scenario) -> dict[str, dict[str, Menu]]:
        """CD/CU agents address the other agents (CU: then their own user); MC's agent the other person."""
        agents = [a.id for a in scenario.agents]
        out: dict[str, dict[str, Menu]] = {}
        for a in scenario.agents:
            if scenario.category == "MC":
                out[a.id] = {"agents": menu([counterpart_of(scenario, a.user).id], ("send", "pass", "done"))}
                continue
            out[a.id] = {"agents": menu([x for x in agents if x != a.id], ("send", "pass", "done"))}
            if scenario.category == "CU":
                out[a.id]["users"] = menu([a.user], ("send", "done"))
        return out

    async def play(self) -> str:
        plays = {"CD": self._cross_domain, "MC": self._mediated, "CU": self._cross_user}
        if self.scenario.category not in plays:
            raise ValueError(f"the dyadic engine does not run category {self.scenario.category}")
        return await plays[self.scenario.category]()

    def _agent_ids(self) -> list[str]:
        return [a.id for a in self.scenario.agents]

    def _count_done(self, entry: LogEntry, enough: bool, done: set[str]) -> None:
        if entry.kind == "done":
            if enough:
                done.add(entry.sender)
            else:
                entry.meta["premature"] = True  # too early to count (recorded, not acted on)

    # -- CD --------------------------------------------------------------------------------------
    async def _cross_domain(self) -> str:
        agents = self._agent_ids()
        rule = ("the plan is settled. When every agent chooses done in the same round, each of you "
                "writes the final message to the user")
        for r in range(1, self.settings.max_rounds + 1):
            self.round = r
            active, done = False, set()
            for a in agents:
                turn, act = await self.agent_turn(a, done_rule=rule)
                entry = self.record_turn(a, turn, act, phase="agents")
                active |= entry.kind == "message"
                enough = sum(1 for e in self.log.delivered() if e.sender in agents) >= MIN_MESSAGES_FOR_DONE
                self._count_done(entry, enough, done)
            if done == set(agents):
                await self._deliver(agents)
                return "consensus"
            if not active:
                return "idle"
        return "max_rounds"

    async def _deliver(self, agents: list[str]) -> None:
        """After consensus, every agent writes its final message to the user."""
        for a in agents:
            user = self.scenario.agent(a).user
            instruction = render("instruction_delivery.j2", principal=self.scenario.person(user).name,
                                 words=self.settings.words)
            turn = await self.call(speaker=a, role="agent", system=self.agent_system(a), instruction=instruction,
                                   output=reply_spec(self.settings.message_max_chars), extra_key="delivery")
            fields = self._turn_fields(turn, "agent", "delivery")
            if not turn.ok:
                self.log.add(kind="failed", sender=a, **fields)
                continue
            d = turn.result.parsed.model_dump()
            self.log.add(kind="message", sender=a, recipients=[user], channel="delivery", content=d["message"],
                         action=d, **fields)

    # -- MC --------------------------------------------------------------------------------------
    async def _mediated(self) -> str:
        agent = self.scenario.agents[0]
        other = counterpart_of(self.scenario, agent.user)
        rule = "the task is complete; this ends the conversation"
        for r in range(1, self.settings.max_rounds + 1):
            self.round = r
            said = await self.human_turn(other.id, [agent.id], "counterpart", phase="agents")
            turn, act = await self.agent_turn(agent.id, done_rule=rule)
            entry = self.record_turn(agent.id, turn, act, phase="agents")
            if entry.kind == "done":
                return "task_done"
            if said.kind != "message" and entry.kind != "message":
                return "idle"
        return "max_rounds"

    # -- CU --------------------------------------------------------------------------------------
    async def _cross_user(self) -> str:
        s = self.scenario
        agents = self._agent_ids()
        side = {a.id: a.user for a in s.agents}
        users = list(dict.fromkeys(a.user for a in s.agents))
        redirects = {u: 0 for u in users}
        agent_rounds = max(1, self.settings.max_rounds - CU_USER_EXCHANGES)
        rule = "your side's part is settled; when every agent chooses done in the same round, you report to your user"

        def crossing() -> int:
            return sum(1 for e in self.log.delivered() if e.sender in side
                       and any(side.get(r, r) != side[e.sender] for r in e.recipients))

        for r in range(1, agent_rounds + 1):
            self.round = r
            active, done = False, set()
            for a in agents:
                turn, act = await self.agent_turn(a, done_rule=rule)
                if act is not None and act.action == "send" and any(side[x] != side[a] for x in act.to):
                    entry = await self._gated(a, turn, act, redirects, side)
                else:
                    entry = self.record_turn(a, turn, act, phase="agents")
                active |= entry.kind == "message"
                self._count_done(entry, crossing() >= MIN_MESSAGES_FOR_DONE, done)
            if done == set(agents) or not active:
                break
        return await self._user_phase(users)

    async def _gated(self, agent_id: str, turn, act, redirects: dict[str, int], side: dict[str, str]) -> LogEntry:
        """A message to the other side passes the sender's team coordinator first."""
        s = self.scenario
        team = side[agent_id]
        coord = f"coordinator_{team}"
        targets = list(dict.fromkeys(act.to))
        if redirects[team] >= CU_MAX_REDIRECTS:
            return self.record_turn(agent_id, turn, act, phase="agents", gate="auto_approved")
        if coord not in self._system_prompts:
            self._system_prompts[coord] = render(
                "coordinator_system.j2", principal=s.person(team), counterpart=counterpart_of(s, team),
                task=s.task, criteria=s.success_criteria)
        instruction = render("instruction_coordinator.j2", proposer=agent_id, targets=targets, proposal=act.message,
                             redirects=redirects[team])
        check = await self.call(speaker=coord, role="coordinator", system=self._system_prompts[coord],
                                instruction=instruction, output=COORDINATOR_SPEC, viewer=agent_id, extra_key=agent_id)
        fields = self._turn_fields(check, "coordinator", "agents", viewer=agent_id, proposer=agent_id)
        decision: dict[str, Any] | None = check.result.parsed.model_dump() if check.ok else None
        if decision is not None and decision["decision"] == "approve":
            self.log.add(kind="gate", sender=coord, recipients=[agent_id], content=decision["reason"],
                         action=decision, **fields)
            return self.record_turn(agent_id, turn, act, phase="agents", gate="approved")
        # redirected, or the coordinator's reply failed validation: fail closed (not delivered)
        redirects[team] += 1
        held = self.log.add(kind="held", sender=agent_id, recipients=targets, channel="direct", content=act.message,
                            action=act.model_dump(), **self._turn_fields(turn, "agent", "agents", gate="redirected"))
        if decision is None:
            self.log.add(kind="failed", sender=coord, **fields)
        else:
            self.log.add(kind="coordinator", sender=coord, recipients=[agent_id], channel="coordinator",
                         content=decision["reason"], action=decision, **fields)
        return held

    async def _user_phase(self, users: list[str]) -> str:
        s = self.scenario
        self.log.system(self.round, "The agents have finished coordinating. Each agent now reports to its own user.",
                        phase="users")
        exchanges = {u: 0 for u in users}
        while self.round < self.settings.max_rounds:
            self.round += 1
            active, all_done = False, True
            for u in users:
                if exchanges[u] >= CU_USER_EXCHANGES:
                    continue
                team = [a.id for a in s.agents_of(u)]
                rule = f"you have nothing more to tell {s.person(u).name}"
                turn, act = await self.agent_turn(team[0], "users", done_rule=rule)
                entry = self.record_turn(team[0], turn, act, phase="users")
                if entry.kind == "message":
                    active, all_done = True, False
                    exchanges[u] += 1
                    await self.human_turn(u, team, "principal", phase="users")
                elif entry.kind != "done":
                    all_done = False
            if all(n >= CU_USER_EXCHANGES for n in exchanges.values()):
                return "exchanges_complete"
            if all_done:
                return "task_done"
            if not active:
                return "idle"
        return "max_rounds"
