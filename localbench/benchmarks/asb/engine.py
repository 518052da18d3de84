"""What the dyadic and the graph engine share: defaults, prompts, one model turn, the transcript.

A simulation is a coroutine that plays one (scenario, privacy level, seed index). Every model
call goes through ``Simulation.call``, which builds the prompt from the speaker's visible history,
fits it into the model's context window (localbench.runtime.context), derives the request seed
and records the call. Actions are decoded under their schema; a turn whose reply failed
validation after the client's retries is logged as a failed turn (the speaker passes) and counted,
never delivered.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from localbench.benchmarks.asb.actions import ActionName, action_spec, reply_spec, specs_hash, unwrap
from localbench.benchmarks.asb.ladder import Level, effective_tier, privacy_context
from localbench.benchmarks.asb.prompting import prompt_set_hash, render
from localbench.benchmarks.asb.scenario import Agent, Scenario
from localbench.runlog import Transcript
from localbench.runtime.calls import OutOfContext, SimulationCalls
from localbench.runtime.clients import RoleClients
from localbench.runtime.log import ConversationLog, LogEntry
from localbench.serving.output import OutputSpec
from localbench.serving.seeds import derive_seed
from localbench.serving.types import GenerationResult

# -- documented defaults (docs/simulation.md; the round limits are the design's) ---------------
TEMPERATURES: dict[str, float] = {"agent": 0.7, "user_sim": 0.8, "coordinator": 0.3}
MIN_MESSAGES_FOR_DONE = 2  # a done signal counts only after this many messages (see engines)
CU_MAX_REDIRECTS = 3  # per side; after that the coordinator approves without a call
CU_USER_EXCHANGES = 3  # agent -> user -> agent exchanges per user in the CU user phase
MAX_MESSAGE_CHARS = 1000
MIN_MESSAGE_CHARS = 32
CHARS_PER_WORD = 6

TERMINATIONS = ("consensus", "task_done", "coordinator_done", "exchanges_complete", "max_rounds", "idle",
                "context_exhausted")


def default_message_chars(max_tokens: int) -> int:
    """The maxLength of a message: what fits in ``max_tokens`` with the JSON around it, counting
    about 3 characters per token (so a reply is not cut by the token limit)."""
    return max(MIN_MESSAGE_CHARS, min(MAX_MESSAGE_CHARS, 3 * (max_tokens - 32)))


@dataclass(frozen=True)
class SimSettings:
    """Run-wide knobs of a simulation."""

    run_seed: int = 0
    max_rounds: int = 10
    max_tokens: int = 200
    message_max_chars: int = 504

    @property
    def words(self) -> int:
        return max(5, self.message_max_chars // CHARS_PER_WORD)


@dataclass(frozen=True)
class SimTask:
    """The identity of one simulation."""

    scenario: Scenario
    level: Level
    seed_index: int = 0

    @property
    def key(self) -> str:
        return f"{self.scenario.id}|{self.level.label}|{self.seed_index}"


class Stop(Exception):
    """Ends a simulation early with a termination reason."""

    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


@dataclass
class Turn:
    """One model call and what its prompt contained."""

    result: GenerationResult
    seen: list[int]
    context: dict[str, Any]

    @property
    def ok(self) -> bool:
        return self.result.ok


# -- prompts -----------------------------------------------------------------------------------
def profile_view(scenario: Scenario, agent: Agent) -> dict[str, Any]:
    """The part of the principal's profile an agent sees. Dyadic agents see the profile keys that
    share a word with their domain (``schedule_health`` sees schedule and health), or the whole
    profile if none does; multi-party agents see the whole profile."""
    profile = dict(scenario.person(agent.user).profile)
    profile.pop("name", None)
    if not scenario.is_dyadic:
        return profile
    words = set(agent.domain.lower().split("_"))
    part = {k: v for k, v in profile.items() if words & set(k.lower().split("_"))}
    return part or profile


def describe_participant(scenario: Scenario, pid: str, principal: str | None = None) -> str:
    """How a participant is introduced in a prompt (``principal``: the reader's own user)."""
    if pid == principal:
        return f"{scenario.person(pid).name}, the person you act for"
    for a in scenario.agents:
        if a.id == pid:
            owner = scenario.person(a.user).name
            desc = f"AI agent acting for {owner}"
            if scenario.category == "CD" or (scenario.is_dyadic and a.domain not in ("", "general")):
                desc += f" ({a.domain})"
            if a.task_role == "coordinator":
                desc += ", the decision-maker" if scenario.category == "CM" else ", the coordinator"
            return desc
    return f"{scenario.person(pid).name}, a person"


def counterpart_of(scenario: Scenario, person: str) -> Any:
    """The other human of a dyadic scenario (MC: the simulated person; CU: the other user)."""
    others = [p for p in scenario.people if p.id != person]
    simulated = [p for p in others if p.simulated]
    return (simulated or others or [scenario.person(person)])[0]


def hub_of(scenario: Scenario) -> Agent | None:
    return next((a for a in scenario.agents if a.task_role == "coordinator"), None)


def agent_system_prompt(scenario: Scenario, agent_id: str, level: Level, addressable: list[str]) -> str:
    """The system prompt of one agent at one privacy level (built the same way in both engines).

    ``addressable``: everyone the agent may write to in any phase; with the other agents, they
    are the participants it is told about.
    """
    agent = scenario.agent(agent_id)
    principal = scenario.person(agent.user)
    hub = hub_of(scenario)
    others = [a.id for a in scenario.agents if a.id != agent_id]
    participants = list(dict.fromkeys(others + [x for x in addressable if x != agent_id]))
    relationships = [
        {"name": scenario.person(e.target).name, "affinity": e.affinity, "context": e.context}
        for e in scenario.graph if e.source == principal.id
    ]
    profile = profile_view(scenario, agent)
    return render(
        "agent_system.j2",
        category=scenario.category,
        agent=agent,
        principal=principal,
        counterpart=counterpart_of(scenario, principal.id),
        hub_name=scenario.person(hub.user).name if hub else "",
        own_user_reachable=scenario.category == "GC",
        task=scenario.task,
        brief=agent.brief,
        knowledge=agent.knows,
        profile_json=json.dumps(profile, ensure_ascii=False) if profile else "",
        participants=[{"id": p, "description": describe_participant(scenario, p, principal.id)} for p in participants],
        relationships=relationships if not scenario.is_dyadic else [],
        components=list(level.components),
        **privacy_context(scenario, agent_id),
    )


def human_system_prompt(scenario: Scenario, person_id: str, mode: str) -> str:
    """A simulated person: MC's other party (``counterpart``) or a user its agents report to
    (``principal``). Simulated people get no privacy instructions at any level."""
    person = scenario.person(person_id)
    agents = scenario.agents_of(person_id)
    if mode == "counterpart":
        principal_name = scenario.person(scenario.agents[0].user).name
        counterpart_name = ""
    else:
        principal_name = person.name
        others = [p for p in scenario.people if p.id != person_id and scenario.agents_of(p.id)]
        counterpart_name = others[0].name if scenario.category == "CU" and others else ""
    return render(
        "human_system.j2", person=person, mode=mode, principal_name=principal_name,
        counterpart_name=counterpart_name, n_agents=max(1, len(agents)),
        knowledge=sorted(person.knowledge.items()),
        profile_json=json.dumps(person.profile, ensure_ascii=False) if mode == "principal" and person.profile else "",
        task=scenario.task,
    )


# -- the simulation base -----------------------------------------------------------------------
Menu = tuple[tuple[str, ...], tuple[ActionName, ...]]
"""What an agent may do in one phase: its valid recipients and its actions."""


def menu(recipients: list[str], actions: tuple[ActionName, ...]) -> Menu:
    """A menu; ``send`` is offered only when there is someone to send to."""
    rec = tuple(dict.fromkeys(recipients))
    return rec, tuple(a for a in actions if a != "send" or rec)


class Simulation:
    """One simulation. Engines implement ``play()`` (returning a termination reason) and
    ``menus()`` (every agent's recipients and actions per phase: the source of its schemas)."""

    engine = ""

    @classmethod
    def menus(cls, scenario: Scenario) -> dict[str, dict[str, Menu]]:
        raise NotImplementedError

    @classmethod
    def action_specs(cls, scenario: Scenario, message_max_chars: int) -> list[OutputSpec]:
        """Every agent action schema this scenario can use (recorded in spec.yaml)."""
        return [action_spec(rec, acts, message_max_chars)
                for phases in cls.menus(scenario).values() for rec, acts in phases.values()]

    def __init__(self, task: SimTask, clients: RoleClients, settings: SimSettings):
        self.task = task
        self.scenario = task.scenario
        self.level = task.level
        self.clients = clients
        self.settings = settings
        self.round = 0
        self.calls = SimulationCalls(clients, settings.max_tokens, dict(TEMPERATURES))
        self.log = ConversationLog(self.participants())
        self._system_prompts: dict[str, str] = {}
        self._specs: dict[str, OutputSpec] = {}
        self._menus = self.menus(self.scenario)

    # participants of the log: every agent and every person
    def participants(self) -> list[str]:
        return [a.id for a in self.scenario.agents] + [p.id for p in self.scenario.people]

    async def play(self) -> str:
        raise NotImplementedError

    # -- model calls ---------------------------------------------------------------------------
    @classmethod
    def system_prompt(cls, scenario: Scenario, agent_id: str, level: Level) -> str:
        """An agent's system prompt in this engine at ``level``."""
        addressable = [r for rec, _ in cls.menus(scenario)[agent_id].values() for r in rec]
        return agent_system_prompt(scenario, agent_id, level, addressable)

    def agent_system(self, agent_id: str) -> str:
        if agent_id not in self._system_prompts:
            self._system_prompts[agent_id] = self.system_prompt(self.scenario, agent_id, self.level)
        return self._system_prompts[agent_id]

    async def call(
        self, *, speaker: str, role: str, system: str, instruction: str, output: OutputSpec,
        viewer: str | None = None, extra_key: str = "", standing: str = "",
    ) -> Turn:
        """One request: the viewer's visible history, fitted to the context window, then recorded.

        ``viewer`` (default: the speaker) picks whose visible history the prompt shows; the history
        calls the speaker's own entries "you" (a coordinator reviewing an agent's proposal sees the
        agent's view, with the agent named).

        ``standing`` (rules that hold turn after turn, such as an agent's action menu) goes before
        the history and ``instruction`` (this turn's ask) after it, so the prompt of a speaker's
        next turn extends this one and an engine's prefix cache computes only what is new.

        Raises Stop("context_exhausted") if the prompt cannot fit even with no history.
        """
        viewer = viewer or speaker
        visible = self.log.visible_to(viewer)
        history = [e.model_dump(include={"round", "kind", "sender", "recipients", "channel", "content"})
                   for e in visible]

        def build(dropped: int) -> list[dict[str, str]]:
            user = render("turn.j2", history=history[dropped:], dropped=dropped, me=speaker,
                          standing=standing, instruction=instruction)
            return [{"role": "system", "content": system}, {"role": "user", "content": user}]

        t = self.task
        seed = derive_seed(self.settings.run_seed, self.scenario.id, self.level.label, t.seed_index, self.round,
                           speaker, role, *([extra_key] if extra_key else []))
        try:
            called = await self.calls.call(role=role, build=build, n_history=len(visible), output=output, seed=seed,
                                           tag=f"{t.key} r{self.round} {speaker}",
                                           where={"round": self.round, "speaker": speaker})
        except OutOfContext as e:
            raise Stop("context_exhausted") from e
        self._specs[output.schema_hash] = output  # schemas of calls that were sent
        return Turn(called.result, [e.index for e in visible[called.fit.dropped:]], called.fit.record())

    def _turn_fields(self, turn: Turn, role: str, phase: str, **meta: Any) -> dict[str, Any]:
        m = dict(meta)
        if not turn.ok:
            m["failure"] = turn.result.failure
            m["rejected_text"] = turn.result.text[:2000]  # kept for diagnosis; never delivered
        return {"round": self.round, "role": role, "phase": phase, "call": turn.result.summary(),
                "seen": turn.seen, "context": turn.context, "meta": m}

    # -- agent turns ---------------------------------------------------------------------------
    def agent_menu(self, recipients: list[str], actions: tuple[ActionName, ...], done_rule: str,
                   group: list[str] = ()) -> str:
        """The actions an agent may take in a phase (the standing part of its turn prompt)."""
        return render("instruction_agent.j2", actions=actions, recipients=recipients, group=list(group),
                      done_rule=done_rule, words=self.settings.words)

    async def agent_turn(
        self, agent_id: str, phase: str = "agents", *, done_rule: str = "", group: list[str] | None = None,
        extra_key: str = "",
    ) -> tuple[Turn, Any]:
        """Ask one agent for its action in ``phase``. Returns the turn and the parsed action (None
        if the reply failed validation after retries)."""
        recipients, acts = self._menus[agent_id][phase]
        spec = action_spec(recipients, acts, self.settings.message_max_chars)
        menu = self.agent_menu(list(recipients), acts, done_rule, group or [])
        instruction = render("instruction_round.j2", round=self.round, max_rounds=self.settings.max_rounds)
        turn = await self.call(speaker=agent_id, role="agent", system=self.agent_system(agent_id), standing=menu,
                               instruction=instruction, output=spec, extra_key=extra_key)
        return turn, (unwrap(turn.result.parsed) if turn.ok else None)

    def record_turn(self, agent_id: str, turn: Turn, action: Any, *, phase: str,
                    group: list[str] | None = None, **meta: Any) -> LogEntry:
        """Log an agent's turn: a delivered message (send/broadcast), a pass, a done or a failure."""
        fields = self._turn_fields(turn, "agent", phase, **meta)
        if action is None:
            return self.log.add(kind="failed", sender=agent_id, **fields)
        d = action.model_dump()
        if d["action"] in ("pass", "done"):
            return self.log.add(kind=d["action"], sender=agent_id, action=d, **fields)
        if d["action"] == "broadcast":
            recipients, channel = list(group or []), "group"
        else:
            recipients, channel = list(dict.fromkeys(d["to"])), "direct"
        if self.scenario.category == "AM":
            people = [self._person_of(r) for r in recipients]
            fields["meta"]["tier"] = effective_tier(self.scenario, self._person_of(agent_id), people)
        return self.log.add(kind="message", sender=agent_id, recipients=recipients, channel=channel,
                            content=d["message"], action=d, **fields)

    def _person_of(self, participant: str) -> str:
        for a in self.scenario.agents:
            if a.id == participant:
                return a.user
        return participant

    # -- simulated people ----------------------------------------------------------------------
    async def human_turn(self, person_id: str, addressees: list[str], mode: str, *, phase: str) -> LogEntry:
        """A simulated person speaks to ``addressees`` (free of privacy instructions)."""
        system = self._system_prompts.get(person_id)
        if system is None:
            system = self._system_prompts[person_id] = human_system_prompt(self.scenario, person_id, mode)
        names = ", ".join(describe_participant(self.scenario, a).replace("AI agent", "the AI agent")
                          for a in addressees)
        instruction = render("instruction_human.j2", addressee=names, name=self.scenario.person(person_id).name,
                             words=self.settings.words)
        turn = await self.call(speaker=person_id, role="user_sim", system=system, instruction=instruction,
                               output=reply_spec(self.settings.message_max_chars))
        fields = self._turn_fields(turn, "user_sim", phase)
        if not turn.ok:
            return self.log.add(kind="failed", sender=person_id, **fields)
        d = turn.result.parsed.model_dump()
        return self.log.add(kind="message", sender=person_id, recipients=addressees, channel="direct",
                            content=d["message"], action=d, **fields)

    # -- running and recording -----------------------------------------------------------------
    async def run(self) -> Transcript:
        """Play to the end and return the transcript record (one line of transcripts.jsonl)."""
        t0 = time.monotonic()
        try:
            reason = await self.play()
        except Stop as s:
            reason = s.reason
        return self.record(reason, time.monotonic() - t0)

    def record(self, termination: str, wall_s: float) -> Transcript:
        s, t = self.scenario, self.task
        return Transcript(
            key=t.key, scenario=s.id, category=s.category, condition=self.level.label, seed_index=t.seed_index,
            model=self.clients.for_role("agent").model_name,
            models={r: self.clients.for_role(r).model_name for r in TEMPERATURES},
            termination=termination, rounds=self.round, max_rounds=self.settings.max_rounds,
            entries=self.log.entries, n_messages=len(self.log.delivered()), **self.calls.counts(),
            prompts=prompt_set_hash(), schemas=specs_hash(list(self._specs.values())) if self._specs else "",
            wall_s=round(wall_s, 3), finished_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            payload={"subtype": s.subtype, "mode": self.level.mode, "engine": self.engine},
        )
