"""The abductive attacker as an ``attack.Attacker``: one evidence-graph investigation per user.

Its transcript payload carries the saved graph (``graph``: nodes and edges, what the viewer lists
admitted hypotheses from and ``render`` draws), the route budget and what was spent
(``route_budget``, ``route_spent``), the per-step log (``steps``: every model call and tool route,
in order) and the ablation flags it ran without.
"""

from __future__ import annotations

from localbench.benchmarks.sopri.abductive.loop import AbductiveLoop
from localbench.benchmarks.sopri.attack import AttackContext, AttackResult, answer_of
from localbench.runtime.calls import OutOfContext


class AbductiveAttacker:
    name = "abductive"

    async def attack(self, ctx: AttackContext) -> AttackResult:
        loop = AbductiveLoop(ctx)
        try:
            await loop.run()
        except OutOfContext as e:  # the simulation counts it unanswered, as for every attacker
            loop.state.termination = "context_exhausted"
            loop.note("stop", "no answer: the prompt does not fit the model's context window", reason=str(e)[:300])
        st = loop.state
        infs = loop.inferences()
        ctx.log.add(round=st.round, kind="inferences", sender="attacker", role="attacker",
                    content=f"{len(infs)} inferences from {len(loop.graph.projected())} admitted hypotheses",
                    action=answer_of(infs),
                    meta={"answered": st.termination != "context_exhausted"})
        payload = {"answered": st.termination != "context_exhausted", "graph": loop.graph.to_json(), "route_budget": st.budget.total, "route_spent": st.budget.spent,
                   "routes": st.budget.history, "steps": st.steps, "without": list(ctx.condition.without),
                   "image_input": loop.posts.image_input if loop.posts is not None else None}
        return AttackResult(infs, st.termination, payload)
