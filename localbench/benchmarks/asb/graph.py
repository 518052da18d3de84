"""The graph engine: group chat (GC), hub-and-spoke (HS), competitive (CM), affinity-modulated (AM).

Each round every agent acts once: a direct message to chosen agents, a broadcast to all other
agents (channel ``group``), a pass, or ``done``. GC and AM take turns in participant order; HS
and CM let the coordinator (hub / decision-maker) go first. In GC an agent may also write to its
own user, who is played by the user simulator and answers its agents at the end of the round.

``done`` counts once the agent has sent at least MIN_MESSAGES_FOR_DONE messages, and signals
accumulate across rounds: GC and AM end by consensus (every agent has signalled), HS and CM when
the coordinator signals. Every run also stops after a round with no message (``idle``) and at the
round limit. In AM each message records the tier that governs it: the most restrictive affinity,
as seen by the sender's user, among its recipients' users.
"""

from __future__ import annotations

from localbench.benchmarks.asb.engine import MIN_MESSAGES_FOR_DONE, Menu, Simulation, menu
from localbench.benchmarks.asb.scenario import Scenario


class GraphSimulation(Simulation):
    engine = "graph"

    @classmethod
    def menus(cls, scenario: Scenario) -> dict[str, dict[str, Menu]]:
        """Every agent may address any other agent (GC: and its own user), or broadcast."""
        agents = [a.id for a in scenario.agents]
        return {a.id: {"agents": menu([x for x in agents if x != a.id] + ([a.user] if scenario.category == "GC" else []),
                                      ("send", "broadcast", "pass", "done"))}
                for a in scenario.agents}

    def _done_rule(self, agent_id: str) -> str:
        need = f"it counts once you have sent at least {MIN_MESSAGES_FOR_DONE} messages"
        cat = self.scenario.category
        if cat in ("GC", "AM"):
            return f"you consider the task finished; the conversation ends when every agent has chosen done ({need})"
        if self.scenario.agent(agent_id).task_role == "coordinator":
            return f"you have reached the final outcome; this ends the conversation ({need})"
        return f"you have nothing more to add ({need})"

    async def play(self) -> str:
        s = self.scenario
        if s.category not in ("GC", "HS", "CM", "AM"):
            raise ValueError(f"the graph engine does not run category {s.category}")
        agents = [a.id for a in s.agents]
        hubs = [a.id for a in s.agents if a.task_role == "coordinator"]
        order = hubs + [a for a in agents if a not in hubs] if s.category in ("HS", "CM") else agents
        done: set[str] = set()
        for r in range(1, self.settings.max_rounds + 1):
            self.round = r
            active = False
            waiting: list[str] = []  # GC users written to this round
            for a in order:
                others = [x for x in agents if x != a]
                own_user = s.agent(a).user
                sent_before = self.log.messages_sent_by(a)
                turn, act = await self.agent_turn(a, done_rule=self._done_rule(a), group=others)
                entry = self.record_turn(a, turn, act, phase="agents", group=others)
                if entry.kind == "message":
                    active = True
                    if own_user in entry.recipients and own_user not in waiting:
                        waiting.append(own_user)
                elif entry.kind == "done":
                    if sent_before >= MIN_MESSAGES_FOR_DONE:
                        done.add(a)
                    else:
                        entry.meta["premature"] = True
            for user in waiting:
                await self.human_turn(user, [x.id for x in s.agents_of(user)], "principal", phase="users")
            if s.category in ("GC", "AM") and done >= set(agents):
                return "consensus"
            if s.category in ("HS", "CM") and any(h in done for h in hubs):
                return "coordinator_done"
            if not active:
                return "idle"
        return "max_rounds"
