"""The defense's utility judge ("intent"): did the sanitizer's rewrite keep each post's social intent?

One call per sanitized simulation (key ``<sim>|intent|all``), showing every post before and after
the rewrite; the schema has one required key per post id, each ``{"kept": bool}``, so a post cannot
be skipped. The label is ``{"kept": {"<post id>": true | false}}`` (UTIL is the share kept). The
judge is template-blind: it sees the two versions of the posts, never the attacker, its condition
or the sanitizer's prompt. A rewrite that failed is shown as what was published (the original), and
the judge's answer on it is recorded like any other.
"""

from __future__ import annotations

from typing import Any

from localbench.benchmarks.sopri.attack import Condition
from localbench.benchmarks.sopri.judge_task import TARGET, judge_task
from localbench.benchmarks.sopri.scenario import User
from localbench.judging.calls import JudgeCall
from localbench.judging.rubrics import render
from localbench.judging.runner import JudgeTask
from localbench.runlog import Judgment, RecordStore, Transcript
from localbench.spec import RunSpec

JUDGE = "intent"
RUBRIC = "sopri/intent.j2"
PAYLOAD = "sanitized_posts"


def intent_schema(post_ids: list[str]) -> dict[str, Any]:
    kept = {"type": "object", "additionalProperties": False, "required": ["kept"],
            "properties": {"kept": {"type": "boolean"}}}
    return {"type": "object", "additionalProperties": False, "required": list(post_ids),
            "properties": {p: kept for p in post_ids}}


def intent_call(user: User, sanitized: list[dict[str, Any]]) -> JudgeCall:
    """The call for one user's posts and their rewrites (``defense.sanitized_payload``)."""
    by_post = {s["post"]: s for s in sanitized}
    missing = [p.id for p in user.posts if p.id not in by_post]
    if missing:
        raise ValueError(f"user '{user.id}': no sanitized version of post(s) {', '.join(missing)}")
    posts = []
    for p in user.posts:
        s = by_post[p.id]
        masked = {int(i.rpartition("/")[2]) for i in s.get("masked", [])}
        posts.append({"id": p.id,
                      "before": {"title": p.title, "caption": p.caption, "tags": p.tags,
                                 "alts": [i.alt for i in p.images]},
                      "after": {"title": s["title"], "caption": s["caption"], "tags": s["tags"], "alts": s["alts"],
                                "masked": masked}})
    ids = [p.id for p in user.posts]
    text = render(RUBRIC, posts=posts)
    return JudgeCall(JUDGE, TARGET, RUBRIC, [{"role": "user", "content": text}], intent_schema(ids),
                     keymap={p: p for p in ids}, n_messages=len(ids), shown=text)


def decode(call: JudgeCall, parsed: dict[str, Any]) -> dict[str, Any]:
    """``{"kept": {post id: bool}}``; a missing or unknown post, or a non-boolean, raises."""
    unknown = sorted(set(parsed) - set(call.keymap))
    if unknown:
        raise KeyError(f"answer names unknown posts {unknown}")
    kept = {}
    for p in call.keymap:
        v = parsed[p]["kept"]
        if not isinstance(v, bool):
            raise ValueError(f"{p}: 'kept' must be true or false, got {v!r}")
        kept[p] = v
    return {"kept": kept}


def is_sanitized(t: Transcript) -> bool:
    return Condition.parse(t.condition).defense == "sanitized"


def intent_tasks(spec: RunSpec, transcripts: list[Transcript], scenarios: dict[str, User],
                 store: RecordStore[Judgment]) -> list[JudgeTask]:
    """One intent call per sanitized simulation (failed simulations have none)."""
    tasks = []
    for t in transcripts:
        if t.error or not is_sanitized(t):
            continue
        user = scenarios.get(t.scenario)
        if user is None:
            raise KeyError(f"transcript {t.key}: user '{t.scenario}' is not in {spec.scenarios}")
        sanitized = t.payload.get(PAYLOAD)
        if not isinstance(sanitized, list):
            raise ValueError(f"transcript {t.key}: a sanitized simulation without payload '{PAYLOAD}'")
        # planned even when stored: the runner skips it as already done
        tasks.append(judge_task(spec, t, intent_call(user, sanitized), decode, {JUDGE: [TARGET]}))
    return tasks
