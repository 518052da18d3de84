"""AgentLeak's gold for each judge behind a headline metric (``localbench.judging.judge_gold``).

- ``leak`` (the tier-3 leak judge: ELR, WLS, CLR): the item judge's minimal pairs (``gold_pairs``);
- ``task`` (the semantic task judge: TSR:semantic): a final answer that reports the request's
  success criteria as done and another scenario's as declined (yes: every criterion met), and its
  twin that reports this request's criteria as declined (no); the same words, asked with the run's
  call (one key per criterion, the quote-grounding check) and read as met only when all are.
"""

from __future__ import annotations

from typing import Any

from localbench.benchmarks.agentleak.gold_pairs import build_gold as build_item_gold
from localbench.benchmarks.agentleak.judges import VaultItemJudge, participant_name
from localbench.benchmarks.agentleak.task_judge import TASK_JUDGE, criteria_call, criteria_met, decode_task
from localbench.judging.calls import JudgeCall
from localbench.judging.gold import GoldItem, GoldMessage
from localbench.judging.judge_gold import ItemGoldJudge, TaskSource, completion_pairs, pairs_only

SEP = "; "


class SemanticTaskGold:
    name, metrics, rubric, item_judge = TASK_JUDGE, "TSR:semantic", "agentleak/task.j2", False

    def build(self, scenarios, seed: int = 0, methods: list[str] | None = None, variants: int = 1) -> list[GoldItem]:
        pairs_only(methods, self.name)
        scenarios = [s for s in scenarios if s.success.criteria]
        sources = [TaskSource(s.id, s.vertical, s.id, s.task, SEP.join(c.strip().rstrip(".") for c in s.success.criteria),
                              participant_name(s, s.agents[0].id) if s.agents else "agent", "user")
                   for s in scenarios]
        by_id = {s.id: s for s in scenarios}
        items = completion_pairs(self.name, sources, seed)
        return [it.model_copy(update={"meta": {**it.meta, "criteria": list(by_id[it.scenario].success.criteria)}})
                for it in items]

    def call(self, item: GoldItem, messages: list[GoldMessage], target: str) -> JudgeCall:
        planted = item.messages[item.planted[0]].content  # the final answer: the judge sees it alone
        call = criteria_call(item.meta["task"], list(item.meta["criteria"]), planted,
                             list(item.meta.get("tools") or []))  # a run's call (real-transcript gold): its tools
        call.target = target
        return call

    def decode(self, call: JudgeCall, parsed: dict[str, Any]) -> dict[str, Any]:
        got = decode_task(call, parsed)
        return {"levels": {call.target: "yes" if criteria_met(got) else "no"}, "verdicts": got["verdicts"]}


def gold_judges() -> dict[str, Any]:
    """Every AgentLeak judge behind a headline metric, by its run name (the item judge first)."""
    return {"leak": ItemGoldJudge("leak", VaultItemJudge(), build_item_gold), "task": SemanticTaskGold()}
