"""The schemas a SopriBench run asks each role for, for the preflight (``runtime.preflight``): the
attackers' profile answer over the first user's posts and the self-disclosure attacker's per-post
findings (and, where the HolmesEye-adapted baseline runs, its stages' schemas), and the granularity
judge's grade of that user's attributes. (The tool-using attackers' tool calls are not sent: the same
engine path carries them, and their schemas follow the tools.)"""

from __future__ import annotations

from collections.abc import Sequence

from localbench.benchmarks.sopri.attack import Condition
from localbench.benchmarks.sopri.attackers import PER_POST_INFERENCES, disclosure_output, profile_output
from localbench.benchmarks.sopri.holmeseye import stage_outputs
from localbench.benchmarks.sopri.judges import GradeItem, grade_call
from localbench.benchmarks.sopri.posts import carriers_of
from localbench.benchmarks.sopri.scenario import User
from localbench.serving.output import OutputSpec
from localbench.spec import RunSpec


def preflight_outputs(spec: RunSpec, scenarios: Sequence[User]) -> dict[str, list[OutputSpec]]:
    if not scenarios:
        return {}
    user = scenarios[0]
    post = user.posts[0]
    attacker = [profile_output([p.id for p in user.posts], user.taxonomy),
                disclosure_output(post.id, carriers_of(post), PER_POST_INFERENCES)]
    if any(Condition.parse(c).attacker == "holmeseye" for c in spec.conditions or []):
        attacker += stage_outputs(user)
    items = [GradeItem(key=f"a{n + 1}", slot=a.slot, truth=a.value, answer=a.value) for n, a in enumerate(user.profile)]
    judge = [OutputSpec.from_schema(grade_call(items).schema, name="granularity")] if items else []
    return {"attacker": attacker, "judge": judge}
