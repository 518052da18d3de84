"""The four baseline attackers (``attack.Attacker``): how much a model infers without abduction.

- ``text`` (TextLLM): every post's text (images as alt text + OCR text) in one prompt → one profile.
- ``post`` (PostVLM): each post alone (its images as pixels for a VLM) → per-post inferences, then
  one aggregation call merges them into the profile.
- ``selfdisc`` (SelfDisc): each post alone → its self-disclosures with their carriers, then the
  same aggregation.
- ``single`` (SingleAgent): one context with the sandbox tools; each step the model calls a tool or
  answers, up to the cohort's round limit, the last step a forced answer.

Every call goes through ``ctx.calls`` under a JSON-schema grammar (cited posts an enum of the
user's post ids) and leaves one log entry: ``model_call`` (with the parsed reply) or ``failed``.
A final answer that failed ends the attack ``no_answer`` with no inferences and
``answered: false`` in the payload: a failure, never "nothing inferred".
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from localbench.benchmarks.sopri.attack import (
    AttackContext,
    AttackResult,
    answer_of,
    answer_schema,
    profile_of,
    profile_schema,
)
from localbench.benchmarks.sopri.posts import PostsInput, carriers_of, content
from localbench.benchmarks.sopri.prompting import PROMPTS
from localbench.benchmarks.sopri.taxonomy import DEFAULT_TAXONOMY, taxonomy
from localbench.benchmarks.sopri.ocr import OcrReader
from localbench.runtime.calls import FittedCall, OutOfContext
from localbench.serving.messages import Message, image_part
from localbench.serving.output import OutputSpec

ROLE = "attacker"
PER_POST_INFERENCES = 6  # what one post alone may yield (the aggregation keeps ctx.max_inferences)
DISCLOSURE_CHARS = 48  # a SelfDisc finding's attribute, in its own words


# -- what every attacker shares -----------------------------------------------------------------

def profile_output(post_ids: Sequence[str], taxonomy_name: str = DEFAULT_TAXONOMY) -> OutputSpec:
    """The final answer's grammar over the 28 slots of ``taxonomy_name`` (the user's ``taxonomy``)."""
    return OutputSpec.from_schema(profile_schema(list(post_ids), taxonomy_name), name="profile")


def disclosure_output(post_id: str, carriers: list[str], max_items: int) -> OutputSpec:
    """SelfDisc's per-post answer: ``{"disclosures": [{attribute, value, carrier, evidence}]}``: free-form
    findings of one post (the aggregation turns them into one value per attribute)."""
    item = answer_schema([post_id])
    props = {"attribute": {"type": "string", "minLength": 1, "maxLength": DISCLOSURE_CHARS},
             **{k: v for k, v in item["properties"].items() if k != "posts"}}
    props["carrier"] = {"enum": carriers}
    one = {"type": "object", "additionalProperties": False, "required": ["attribute", "value", "carrier", "evidence"],
           "properties": props}
    return OutputSpec.from_schema({"type": "object", "additionalProperties": False, "required": ["disclosures"],
                                   "properties": {"disclosures": {"type": "array", "items": one,
                                                                  "maxItems": max_items}}}, name="disclosures")


def system_vars(ctx: AttackContext, **extra: Any) -> dict[str, Any]:
    return {"slots": taxonomy(ctx.user.taxonomy).slots, "max_inferences": ctx.max_inferences, "vision": ctx.vision, **extra}


def reader_of(ctx: AttackContext) -> OcrReader:
    """The run's OCR reader (shared by its simulations), or a fresh one."""
    reader = ctx.settings.get("ocr_reader")
    return reader if isinstance(reader, OcrReader) else OcrReader()


class Session:
    """One attacker's calls on one user: each sent through ``ctx.calls`` and logged."""

    def __init__(self, ctx: AttackContext):
        self.ctx = ctx
        self.failed = 0

    async def ask(self, *, step: str, round: int, build: Callable[[int], list[Message]], n_history: int,
                  output: OutputSpec, seed_parts: Sequence[Any] = ()) -> dict[str, Any] | None:
        """The parsed reply, or None when the call failed (logged as ``failed`` and counted).
        Raises OutOfContext when even the prompt without history does not fit."""
        got = await self.send(step=step, round=round, build=build, n_history=n_history, output=output,
                              seed_parts=seed_parts)
        return self.record(got, step=step, round=round, output=output)

    async def send(self, *, step: str, round: int, build: Callable[[int], list[Message]], n_history: int,
                   output: OutputSpec, seed_parts: Sequence[Any] = ()) -> FittedCall:
        """One call, not yet logged (concurrent calls are logged afterwards, in a fixed order)."""
        ctx = self.ctx
        return await ctx.calls.call(role=ROLE, build=build, n_history=n_history, output=output,
                                    seed=ctx.seed(step, *seed_parts), tag=f"{ctx.key} {step}",
                                    where={"round": round, "speaker": ROLE, "step": step})

    def record(self, got: FittedCall, *, step: str, round: int, output: OutputSpec) -> dict[str, Any] | None:
        """Log a sent call: ``model_call`` with its parsed reply, or ``failed`` (counted); the parsed reply."""
        res = got.result
        meta = {"step": step, "schema": output.schema_hash, "schema_name": output.name}
        if got.ok:
            self.ctx.log.add(round=round, kind="model_call", sender=ROLE, content=res.text, role=ROLE,
                             action=res.parsed, call=res.summary(), context=got.fit.record(), meta=meta)
            return res.parsed
        self.failed += 1
        self.ctx.log.add(round=round, kind="failed", sender=ROLE, content=res.text, role=ROLE, call=res.summary(),
                         context=got.fit.record(), meta={**meta, "failure": res.failure})
        return None

    def out_of_context(self, *, step: str, round: int, error: OutOfContext) -> None:
        """A call whose prompt could not fit at all: logged as ``failed`` and counted."""
        self.failed += 1
        self.ctx.log.add(round=round, kind="failed", sender=ROLE, role=ROLE,
                         meta={"step": step, "failure": f"context exhausted: {error}"})

    def finish(self, parsed: dict[str, Any] | None, round: int, **payload: Any) -> AttackResult:
        """The final profile (logged as ``inferences``), or ``no_answer`` when the answer failed."""
        if parsed is None:
            self.ctx.log.add(round=round, kind="inferences", sender=ROLE, content="no answer: the final call failed",
                             role=ROLE, meta={"answered": False})
            return AttackResult([], "no_answer", {"answered": False, "failed_calls": self.failed, **payload})
        inferences = profile_of(parsed)
        self.ctx.log.add(round=round, kind="inferences", sender=ROLE, content=f"{len(inferences)} attributes answered",
                         role=ROLE, action=answer_of(inferences), meta={"answered": True})
        return AttackResult(inferences, "answered", {"answered": True, "failed_calls": self.failed, **payload})

    def exhausted(self, round: int, **payload: Any) -> AttackResult:
        self.ctx.log.add(round=round, kind="inferences", sender=ROLE, role=ROLE,
                         content="no answer: the prompt does not fit the model's context window",
                         meta={"answered": False})
        return AttackResult([], "context_exhausted", {"answered": False, "failed_calls": self.failed, **payload})


def _system(template: str, ctx: AttackContext, **extra: Any) -> Message:
    return {"role": "system", "content": PROMPTS.render(template, **system_vars(ctx, **extra))}


# -- TextLLM ------------------------------------------------------------------------------------

class TextLLM:
    """All of a user's post text at once → one profile: title, caption, hashtags, time and IP region of
    every post, no image content of any kind and no tools (the paper's TextLLM, Appendix B)."""

    name = "text"

    async def attack(self, ctx: AttackContext) -> AttackResult:
        s = Session(ctx)
        inp = PostsInput.text_of(ctx.user)
        posts = ctx.user.posts
        system = _system("text_system.j2", ctx)

        def build(k: int) -> list[Message]:  # the k earliest posts left out
            parts = [inp.header(k), *inp.posts_parts(posts[k:]), PROMPTS.render("text_ask.j2")]
            return [system, {"role": "user", "content": content(parts)}]

        extra = {"image_input": inp.image_input}
        try:
            parsed = await s.ask(step="profile", round=0, build=build, n_history=len(posts),
                                 output=profile_output([p.id for p in posts], ctx.user.taxonomy))
        except OutOfContext:
            return s.exhausted(0, **extra)
        return s.finish(parsed, 0, **extra)


# -- PostVLM and SelfDisc: each post alone, then one aggregation ----------------------------------

class _PerPost:
    """Reads each post alone (concurrently: the engine batches them), then merges the findings."""

    name = ""
    system_template = ""
    ask_template = ""
    what = "findings"

    def output(self, ctx: AttackContext, post: Any) -> OutputSpec:
        raise NotImplementedError

    def findings(self, post_id: str, parsed: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    async def attack(self, ctx: AttackContext) -> AttackResult:
        s = Session(ctx)
        inp = await PostsInput.prepare(ctx.user, ctx.vision, reader_of(ctx))
        posts = ctx.user.posts
        n = len(posts)
        sent = await asyncio.gather(*(self._read(s, inp, i) for i in range(n)))
        replies = []
        for i, (post, (got, output)) in enumerate(zip(posts, sent)):  # logged in post order, not as they finished
            if isinstance(got, OutOfContext):
                s.out_of_context(step=f"read {post.id}", round=i, error=got)
                replies.append(None)
            else:
                replies.append(s.record(got, step=f"read {post.id}", round=i, output=output))
        per_post: dict[str, Any] = {}
        blocks: list[str] = []
        failed_posts: list[str] = []
        for post, got in zip(posts, replies):
            per_post[post.id] = got
            if got is None:
                failed_posts.append(post.id)
            else:
                blocks.append(f"Post {post.id}:\n" + ("\n".join(self.findings(post.id, got)) or "(nothing found)"))
        extra = {"image_input": inp.image_input, "per_post": self.record(ctx, per_post), "failed_posts": failed_posts}
        system = _system("aggregate_system.j2", ctx)

        def build(k: int) -> list[Message]:  # the k earliest posts' findings left out
            ask = PROMPTS.render("aggregate_ask.j2", findings=blocks[k:], dropped=k, what=self.what)
            return [system, {"role": "user", "content": content([inp.header(), ask])}]

        try:
            parsed = await s.ask(step="aggregate", round=n, build=build, n_history=len(blocks),
                                 output=profile_output([p.id for p in posts], ctx.user.taxonomy))
        except OutOfContext:
            return s.exhausted(n, **extra)
        return s.finish(parsed, n, **extra)

    async def _read(self, s: Session, inp: PostsInput, i: int) -> tuple[FittedCall | OutOfContext, OutputSpec]:
        ctx = s.ctx
        post = ctx.user.posts[i]
        system = _system(self.system_template, ctx,
                         max_inferences=min(ctx.max_inferences, PER_POST_INFERENCES))
        ask = PROMPTS.render(self.ask_template, carriers=carriers_of(post))
        output = self.output(ctx, post)

        def build(k: int) -> list[Message]:
            return [system, {"role": "user", "content": content([inp.header(), *inp.post_parts(post), ask])}]

        try:
            got: FittedCall | OutOfContext = await s.send(step=f"read {post.id}", round=i, build=build, n_history=0,
                                                          output=output, seed_parts=(post.id,))
        except OutOfContext as e:  # this post alone does not fit: read as a failure, the others go on
            got = e
        return got, output

    def record(self, ctx: AttackContext, per_post: dict[str, Any]) -> dict[str, Any]:
        return per_post


class PostVLM(_PerPost):
    """Each post alone (images as pixels for a VLM) → its inferences; then one aggregation."""

    name = "post"
    system_template = "post_system.j2"
    ask_template = "post_ask.j2"
    what = "per-post findings"

    def output(self, ctx: AttackContext, post: Any) -> OutputSpec:
        return profile_output([post.id], ctx.user.taxonomy)

    def findings(self, post_id: str, parsed: dict[str, Any]) -> list[str]:
        return [f"- {x.attribute}: {x.value}" + (f" ({x.evidence})" if x.evidence else "") for x in profile_of(parsed)]


class SelfDisc(_PerPost):
    """Each post alone → what it discloses about its author, with the carrier; then one aggregation."""

    name = "selfdisc"
    system_template = "selfdisc_system.j2"
    ask_template = "selfdisc_ask.j2"
    what = "self-disclosures"

    def output(self, ctx: AttackContext, post: Any) -> OutputSpec:
        return disclosure_output(post.id, carriers_of(post), min(ctx.max_inferences, PER_POST_INFERENCES))

    def findings(self, post_id: str, parsed: dict[str, Any]) -> list[str]:
        return [f"- {x['attribute']}: {x['value']} [in {x['carrier']}]" + (f" ({x['evidence']})" if x["evidence"] else "")
                for x in parsed["disclosures"]]

    def record(self, ctx: AttackContext, per_post: dict[str, Any]) -> dict[str, Any]:
        """Disclosures with image carriers named as ``scenario.Carrier`` has them (``image:<file>``)."""
        out: dict[str, Any] = {}
        for pid, parsed in per_post.items():
            if parsed is None:
                out[pid] = None
                continue
            files = {f"image:{pid}/{n}": f"image:{img.file}" for n, img in enumerate(ctx.user.post(pid).images, 1)}
            out[pid] = {"disclosures": [{**d, "carrier": files.get(d["carrier"], d["carrier"])}
                                        for d in parsed["disclosures"]]}
        return out


# -- SingleAgent --------------------------------------------------------------------------------

class SingleAgent:
    """One context with the sandbox tools: each step a tool call or the answer; the last step (or
    the step after the budget runs out) a forced answer."""

    name = "single"

    async def attack(self, ctx: AttackContext) -> AttackResult:
        s = Session(ctx)
        inp = await PostsInput.prepare(ctx.user, ctx.vision, reader_of(ctx))
        posts = ctx.user.posts
        post_ids = [p.id for p in posts]
        max_rounds = max(1, int(ctx.settings.get("max_rounds", 8)))
        tools = ctx.toolbox.tools
        system = _system("single_system.j2", ctx, max_rounds=max_rounds, budget=ctx.budget,
                         tools=ctx.toolbox.describe() or "(no tools for this user)")
        answer = profile_schema(post_ids, ctx.user.taxonomy)
        steps: list[dict[str, Any]] = []  # {"call": json text, "result": ToolResult}
        spent = 0
        calls = 0
        extra: dict[str, Any] = {"image_input": inp.image_input}
        for r in range(max_rounds):
            left = max_rounds - r - 1
            affordable = [n for n, t in tools.items() if t.cost <= ctx.budget - spent]
            final = left == 0 or not affordable
            output = (OutputSpec.from_schema(answer, name="profile") if final else OutputSpec.from_schema(
                {"anyOf": [*ctx.toolbox.call_schema(affordable)["anyOf"], answer]}, name="step"))
            state = {"final": final, "steps_left": left, "budget_left": ctx.budget - spent}

            def build(k: int, state=state) -> list[Message]:
                return self._messages(inp, system, steps, k, state)

            try:
                parsed = await s.ask(step=f"step {r}", round=r, build=build, n_history=len(steps) + len(posts),
                                     output=output)
            except OutOfContext:
                return s.exhausted(r, **extra, route_spent=spent, tool_calls=calls)
            if final or (parsed is not None and "tool" not in parsed):  # no slot is named "tool"
                return s.finish(parsed, r, **extra, route_spent=spent, tool_calls=calls)
            if parsed is None:
                continue  # the failed step is logged; the next one is asked afresh
            name, args = parsed["tool"], parsed["args"]
            cost = tools[name].cost
            ctx.log.add(round=r, kind="tool_call", sender=ROLE, recipients=[name], content=json.dumps(args),
                        role=ROLE, action=parsed, meta={"cost": cost})
            result = await asyncio.to_thread(ctx.toolbox.run, name, args)
            spent += cost
            calls += 1
            ctx.log.add(round=r, kind="tool_result", sender=name, recipients=[ROLE],
                        content=result.text if result.ok else f"error: {result.error}",
                        meta={"ok": result.ok, **({"image_bytes": len(result.image)} if result.image else {})})
            steps.append({"call": json.dumps(parsed), "result": result})
        return s.finish(None, max_rounds, **extra, route_spent=spent, tool_calls=calls)  # pragma: no cover

    def _messages(self, inp: PostsInput, system: Message, steps: list[dict[str, Any]], k: int,
                  state: dict[str, Any]) -> list[Message]:
        """System, the posts with the first ask, then one (call, result) exchange per step kept. To fit,
        the oldest exchanges go first (``k`` up to their number), then the earliest posts."""
        k_steps = min(k, len(steps))
        k_posts = k - k_steps
        shown = steps[k_steps:]
        # only the newest message says how many steps and how much budget are left (and whether this is
        # the forced answer); earlier messages stay as they were, so the prompt's prefix is reused
        first = PROMPTS.render("single_ask.j2", dropped=k_steps, status=not shown, **state)
        msgs: list[Message] = [system, {"role": "user", "content": content(
            [inp.header(k_posts), *inp.posts_parts(inp.user.posts[k_posts:]), first])}]
        for i, st in enumerate(shown):
            res = st["result"]
            text = PROMPTS.render("single_result.j2", ok=res.ok, text=res.text, error=res.error or "",
                                  status=i == len(shown) - 1, **state)
            parts: list[Any] = [text]
            if inp.vision and res.image:
                parts = [text, image_part(data=res.image, mime_type="image/png")]
            msgs += [{"role": "assistant", "content": st["call"]}, {"role": "user", "content": content(parts)}]
        return msgs
