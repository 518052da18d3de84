"""AgentSocialBench's gold for each judge behind a headline metric (``localbench.judging.judge_gold``).

- ``privacy`` (CDLR, MLR, CULR): the item judge's minimal pairs (``gold_pairs``);
- ``privacy_pairs`` (MPLR, HALR, CSLR, ACS): a multi-party item's fact to a person it must not
  reach, its person twin (someone else's fact, to the same person) and its recipient twin (the same
  message to someone it may reach); asked with the pair rubric, the label read for that person;
- ``abstraction`` (IAS): the item stated against its acceptable abstraction in one carrier sentence,
  and stated about its owner against about someone else; the score read at the planted message;
- ``task`` (TCQ, Task%): a closing message reporting the task's criterion done (yes) or open (no).

The behaviour judge's flags feed no headline metric and have no gold.
"""

from __future__ import annotations

import random
from typing import Any

from localbench.benchmarks.asb import judges as J
from localbench.benchmarks.asb.boundaries import forbidden_recipients
from localbench.benchmarks.asb.gold_pairs import build_gold as build_item_gold
from localbench.benchmarks.asb.planting import participant_name, sources_from_scenario
from localbench.judging.calls import JudgeCall, render_lines
from localbench.judging.construct import first_name
from localbench.judging.gold import GoldItem, GoldMessage, GoldPrivateItem
from localbench.judging.judge_gold import (AbstractionSource, ItemGoldJudge, RecipientSource, TaskSource,
                                           abstraction_pairs, completion_pairs, pairs_only, reading_at,
                                           recipient_pairs)
from localbench.judging.pairs import PairSource, other_names
from localbench.serving.seeds import derive_seed


def _shown(messages: list[GoldMessage]) -> list[dict[str, Any]]:
    return [m.model_dump() for m in messages]


def _planted_at(item: GoldItem, messages: list[GoldMessage]) -> int:
    """Where the item's planted message sits among ``messages`` (a variant may move it)."""
    target = item.messages[item.planted[0] if item.planted else -1]
    for i, m in enumerate(messages):
        if m.content == target.content and m.sender == target.sender:
            return i
    raise ValueError(f"{item.id}: its planted message is not among the messages shown")


class PairRubricGold:
    name, metrics, rubric, item_judge = "privacy_pairs", "MPLR, HALR, CSLR and ACS", "asb/privacy_pairs.j2", False

    def build(self, scenarios, seed: int = 0, methods: list[str] | None = None, variants: int = 1) -> list[GoldItem]:
        pairs_only(methods, self.name)
        multi = [s for s in scenarios if not s.is_dyadic]
        pick = other_names(((s.id, s.person(it.owner).name) for s in multi for it in s.items), seed)
        sources = []
        for s in multi:
            for it in s.items:
                banned = forbidden_recipients(s, it)
                if not banned:
                    continue
                rng = random.Random(derive_seed(seed, "recipients", s.id, it.id))
                forbidden = rng.choice(sorted(banned))
                allowed = sorted(p.id for p in s.people if p.id not in banned and p.id != it.owner) or [it.owner]
                owner = s.person(it.owner).name
                src = PairSource(item=GoldPrivateItem(owner=owner, text=it.text, id=it.id, domain=it.domain),
                                 sender=participant_name(s, it.holder), recipient=participant_name(s, forbidden),
                                 other=pick(s.id, owner), scenario=s.id, category=s.category)
                sources.append(RecipientSource(src, participant_name(s, rng.choice(allowed))))
        return recipient_pairs(self.name, sources, seed)

    def call(self, item: GoldItem, messages: list[GoldMessage], target: str) -> JudgeCall:
        person = item.meta["forbidden"][0]
        rk = first_name(person).lower() or "person"
        call = J.privacy_pairs_call(item.item.owner, render_lines(_shown(messages)),
                                    [("item_1", item.item.text, [(rk, person)])],
                                    J.privacy_pairs_schema({"item_1": [rk]}),
                                    {"items": {"item_1": item.id}, "recipients": {"item_1": {rk: person}}}, target)
        call.n_messages = len(messages)
        return call

    def decode(self, call: JudgeCall, parsed: dict[str, Any]) -> dict[str, Any]:
        got = J.decode(call, parsed)
        return {"levels": {i: next(iter(per.values())) for i, per in got["levels"].items()},
                "evidence": got["evidence"]}


class AbstractionGold:
    name, metrics, rubric, item_judge = "abstraction", "IAS", "asb/abstraction.j2", False

    def build(self, scenarios, seed: int = 0, methods: list[str] | None = None, variants: int = 1) -> list[GoldItem]:
        pairs_only(methods, self.name)
        plant = [p for s in scenarios for p in sources_from_scenario(s)]
        pick = other_names(((p.scenario or "", p.item.owner) for p in plant), seed)
        sources = [AbstractionSource(PairSource(item=p.item, sender=p.names.get(p.sender, p.sender),
                                                recipient=p.names.get(p.recipient, p.recipient),
                                                other=pick(p.scenario or "", p.item.owner),
                                                scenario=p.scenario or "", category=p.category),
                                     p.abstractions[0] if p.abstractions else None) for p in plant]
        return abstraction_pairs(self.name, sources, seed)

    def call(self, item: GoldItem, messages: list[GoldMessage], target: str) -> JudgeCall:
        keys = [f"m_{i}" for i in range(len(messages))]
        if item.meta.get("keys") and messages == item.messages:  # a run's call (real-transcript gold): its keys
            keys = list(item.meta["keys"])
        call = J.abstraction_call(list(item.meta.get("items") or [item.item.text]),  # a run's call: every item
                                  render_lines(_shown(messages), keys=keys),
                                  {k: i for i, k in enumerate(keys)}, target)
        call.n_messages = len(messages)
        return reading_at(call, keys[_planted_at(item, messages)])  # the item's score: its planted message's

    def decode(self, call: JudgeCall, parsed: dict[str, Any]) -> dict[str, Any]:
        J.decode(call, parsed)  # the run's decoding: an answer it would reject is a failure here too
        return {"levels": {call.target: parsed[call.read_at]}}  # type: ignore[attr-defined]


class TaskGold:
    name, metrics, rubric, item_judge = "task", "Task% and TCQ (completed flag)", "asb/task.j2", False

    def build(self, scenarios, seed: int = 0, methods: list[str] | None = None, variants: int = 1) -> list[GoldItem]:
        pairs_only(methods, self.name)
        sources = []
        for s in scenarios:
            agents = [participant_name(s, a.id) for a in s.agents][:2]
            if len(agents) < 2 or not s.success_criteria.task_completed.strip():
                continue
            sources.append(TaskSource(s.id, s.category, s.people[0].name, s.task,
                                      s.success_criteria.task_completed, agents[0], agents[1]))
        return completion_pairs(self.name, sources, seed)

    def call(self, item: GoldItem, messages: list[GoldMessage], target: str) -> JudgeCall:
        keys = list(item.meta["keys"]) if item.meta.get("keys") and messages == item.messages else None
        return JudgeCall("task", target, "asb/task.j2",  # keys: a run's call (real-transcript gold) numbers its own
                         J.task_messages(item.meta["task"], item.item.text, render_lines(_shown(messages), keys=keys)),
                         J.TASK_SCHEMA, n_messages=len(messages))

    def decode(self, call: JudgeCall, parsed: dict[str, Any]) -> dict[str, Any]:
        got = J.decode(call, parsed)
        return {"levels": {call.target: "yes" if got["task_completed"] else "no"}, "tcq": got["tcq"]}


def gold_judges() -> dict[str, Any]:
    """Every ASB judge behind a headline metric, by its run name (the item judge first)."""
    return {"privacy": ItemGoldJudge("privacy", J.ItemLeakJudge(), build_item_gold), "privacy_pairs": PairRubricGold(),
            "abstraction": AbstractionGold(), "task": TaskGold()}


