"""The HolmesEye-adapted baseline (``holmeseye``; the paper's "HolmesEye-adapted"): prior work's
multi-image profiling, adapted to SopriBench as the release does it.

HolmesEye ("The Eye of Sherlock Holmes") does not put every image into one call. The release's
adaptation (``baselines/holmeseye_adapted.py`` of sfofgalaxy/AUGUS; facts only, the code and prompts
here are localbench's) runs five stages with one model, the same one reading images and text:

1. intra-image extraction: each image alone, with its post's time, IP region and caption → the
   privacy-relevant cues it shows;
2. inter-image analysis: the images in groups of ``GROUP_SIZE`` (3, the release's default) → what
   recurs or connects across them;
3. summarization: the profile header, every post's text and both stages' findings → an initial
   profile and at most ``MAX_QUESTIONS`` (3) focused questions, each naming the images to ask;
4. focused inquiry: each question put to its images (at most ``INQUIRY_IMAGES``, 8; the first
   images when it names none), in groups of ``GROUP_SIZE``;
5. final decision: the initial profile and the inquiry's answers → the final profile.

No tools, no hypotheses, no evidence graph, no verifier. Users without images skip stages 1, 2 and
4. A model that takes no images reads each image as its alt text and OCR text (``posts``), as every
localbench attacker does. Every call is grammar-constrained (images and posts as enums of the
user's ids, attributes as the taxonomy's slots); a failed intermediate call leaves its findings out
and is counted; a failed final call ends the attack ``no_answer`` (never "nothing inferred").
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from localbench.benchmarks.sopri.attack import AttackContext, AttackResult
from localbench.benchmarks.sopri.attackers import Session, profile_output, reader_of, system_vars
from localbench.benchmarks.sopri.posts import PostsInput, content
from localbench.benchmarks.sopri.prompting import PROMPTS
from localbench.benchmarks.sopri.scenario import User
from localbench.benchmarks.sopri.taxonomy import taxonomy
from localbench.benchmarks.sopri.tools import image_index
from localbench.runtime.calls import FittedCall, OutOfContext
from localbench.serving.messages import ContentPart, Message, image_part, text_part
from localbench.serving.output import OutputSpec

GROUP_SIZE = 3
MAX_QUESTIONS = 3
INQUIRY_IMAGES = 8
MAX_CUES = 6
TEXT_CHARS = 200


def _text(max_length: int = TEXT_CHARS) -> dict[str, Any]:
    return {"type": "string", "maxLength": max_length}


def _obj(**props: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "required": list(props), "properties": props}


def _list(item: dict[str, Any], max_items: int) -> dict[str, Any]:
    return {"type": "array", "items": item, "maxItems": max_items}


def _slots(slots: list[str]) -> dict[str, Any]:
    return _list({"enum": slots}, 3)


def extract_output(slots: list[str]) -> OutputSpec:
    """Stage 1: the cues one image shows, each with the attributes it bears on."""
    cue = _obj(cue=_text(), supports=_slots(slots))
    return OutputSpec.from_schema(_obj(observations=_list(cue, MAX_CUES), notes=_text(300)), name="holmeseye_extract")


def inter_output(slots: list[str], image_ids: list[str]) -> OutputSpec:
    """Stage 2: patterns across a group of images, each naming the images it joins."""
    pattern = _obj(pattern=_text(), images=_list({"enum": image_ids}, len(image_ids)), supports=_slots(slots))
    return OutputSpec.from_schema(_obj(patterns=_list(pattern, MAX_CUES), notes=_text(300)), name="holmeseye_inter")


def summary_output(slots: list[str], image_ids: list[str], profile: dict[str, Any]) -> OutputSpec:
    """Stage 3: the initial profile (the answer schema) and the focused questions still open."""
    if not image_ids:  # nothing to ask images about
        return OutputSpec.from_schema(_obj(profile=profile), name="holmeseye_summary")
    question = _obj(attribute={"enum": slots}, question=_text(), images=_list({"enum": image_ids}, INQUIRY_IMAGES))
    return OutputSpec.from_schema(_obj(profile=profile, questions=_list(question, MAX_QUESTIONS)),
                                  name="holmeseye_summary")


def inquiry_output(image_ids: list[str]) -> OutputSpec:
    """Stage 4: one question answered from a group of images ("unsupported" where they do not say)."""
    answer = _obj(image={"enum": image_ids}, answer=_text())
    return OutputSpec.from_schema(_obj(answers=_list(answer, len(image_ids)), conclusion=_text()),
                                  name="holmeseye_inquiry")


def stage_outputs(user: User) -> list[OutputSpec]:
    """The intermediate stages' schemas over one user's images and slots (for the run's preflight; the
    final answer is every attacker's profile schema)."""
    slots = list(taxonomy(user.taxonomy).names)
    images = list(image_index(user))
    final = profile_output([p.id for p in user.posts], user.taxonomy)
    out = [extract_output(slots), summary_output(slots, images, final.schema)]
    if images:
        out += [inter_output(slots, images[:GROUP_SIZE]), inquiry_output(images[:GROUP_SIZE])]
    return out


def _groups(items: list[Any], size: int) -> list[list[Any]]:
    return [items[i:i + size] for i in range(0, len(items), size)]


class HolmesEye:
    """The five stages above, one model throughout."""

    name = "holmeseye"

    async def attack(self, ctx: AttackContext) -> AttackResult:
        s = Session(ctx)
        inp = await PostsInput.prepare(ctx.user, ctx.vision, reader_of(ctx))
        posts = ctx.user.posts
        post_ids = [p.id for p in posts]
        images = list(image_index(ctx.user))
        slots = list(taxonomy(ctx.user.taxonomy).names)
        final = profile_output(post_ids, ctx.user.taxonomy)
        payload: dict[str, Any] = {"image_input": inp.image_input, "stages": {}}
        stages = payload["stages"]

        # 1. each image alone; 2. groups of images (concurrent within a stage: the engine batches them)
        extract = extract_output(slots)
        stages["extract"] = await self._many(s, inp, "extract", 0, [[i] for i in images], lambda ids: extract)
        groups = _groups(images, GROUP_SIZE)
        stages["inter"] = await self._many(s, inp, "inter", 1, groups, lambda ids: inter_output(slots, ids))

        # 3. the initial profile and the questions still open
        found = {"extract": stages["extract"], "inter": stages["inter"]}
        summary = summary_output(slots, images, final.schema)
        try:
            parsed = await s.ask(step="summarize", round=2, build=self._posts_build(ctx, inp, "summarize", found),
                                 n_history=len(posts), output=summary)
        except OutOfContext:
            return s.exhausted(2, **payload)
        stages["summarize"] = parsed
        questions = (parsed or {}).get("questions", [])[:MAX_QUESTIONS] if images else []

        # 4. each question to its images, in groups
        asks = []
        for q in questions:
            named = [i for i in q["images"] if i in images] or images
            for group in _groups(named[:INQUIRY_IMAGES], GROUP_SIZE):
                asks.append((q, group))
        stages["inquiry"] = await self._many(s, inp, "inquiry", 3, [g for _, g in asks], inquiry_output,
                                             questions=[q["question"] for q, _ in asks])

        # 5. the final profile
        found = {"initial": (parsed or {}).get("profile"),
                 "inquiry": [{"attribute": q["attribute"], "question": q["question"], "answers": done["reply"]}
                             for (q, _), done in zip(asks, stages["inquiry"])]}
        try:
            answer = await s.ask(step="decide", round=4, build=self._posts_build(ctx, inp, "decide", found),
                                 n_history=len(posts), output=final)
        except OutOfContext:
            return s.exhausted(4, **payload)
        return s.finish(answer, 4, **payload)

    async def _many(self, s: Session, inp: PostsInput, stage: str, round: int, groups: list[list[str]],
                    output_of: Callable[[list[str]], OutputSpec],
                    questions: list[str] | None = None) -> list[dict[str, Any]]:
        """One call per group of images, sent together and logged in order: ``{images, reply}`` each, the
        reply None where the call failed or did not fit (counted; its findings are left out)."""
        outputs = [output_of(g) for g in groups]
        asked = questions or [""] * len(groups)
        sent = await asyncio.gather(*(self._send(s, inp, stage, round, g, o, asked[n], n)
                                      for n, (g, o) in enumerate(zip(groups, outputs))))
        out: list[dict[str, Any]] = []
        for n, (group, got, output) in enumerate(zip(groups, sent, outputs)):
            step = f"{stage} {n + 1}"
            if isinstance(got, OutOfContext):
                s.out_of_context(step=step, round=round, error=got)
                reply = None
            else:
                reply = s.record(got, step=step, round=round, output=output)
            out.append({"images": group, "reply": reply})
        return out

    async def _send(self, s: Session, inp: PostsInput, stage: str, round: int, group: list[str], output: OutputSpec,
                    question: str, n: int) -> FittedCall | OutOfContext:
        ctx = s.ctx
        system = {"role": "system", "content": PROMPTS.render("holmeseye_system.j2", stage=stage,
                                                                **system_vars(ctx, max_cues=MAX_CUES))}
        parts: list[ContentPart | str] = [inp.header()]
        for iid in group:
            parts += self._image_parts(inp, iid)
        parts.append(PROMPTS.render("holmeseye_ask.j2", stage=stage, images=group, question=question))
        messages: list[Message] = [system, {"role": "user", "content": content(parts)}]
        try:
            return await s.send(step=f"{stage} {n + 1}", round=round, build=lambda k: messages, n_history=0,
                                output=output, seed_parts=(stage, n))
        except OutOfContext as e:  # this group alone does not fit: a failure, the others go on
            return e

    def _image_parts(self, inp: PostsInput, iid: str) -> list[ContentPart]:
        """One image with its post's context: the pixels for a VLM, else its alt and OCR text."""
        post, img = image_index(inp.user)[iid]
        text = PROMPTS.render("holmeseye_image.j2", id=iid, post=post, alt=img.alt, vision=inp.vision,
                              ocr=None if inp.vision else inp.ocr.get(iid, ""))
        if inp.vision and inp.user.folder is not None:
            return [text_part(text), image_part(path=inp.user.image_path(img))]
        return [text_part(text)]

    def _posts_build(self, ctx: AttackContext, inp: PostsInput, stage: str,
                     found: dict[str, Any]) -> Callable[[int], list[Message]]:
        """Stages 3 and 5: the posts' text (no pixels: the images were read in stages 1, 2 and 4) and
        the findings so far; to fit, the earliest posts go first."""
        system = {"role": "system", "content": PROMPTS.render("holmeseye_system.j2", stage=stage,
                                                                **system_vars(ctx, max_cues=MAX_CUES))}
        text_only = PostsInput(inp.user, False, inp.ocr)
        findings = json.dumps(found, ensure_ascii=False, indent=1)

        def build(k: int) -> list[Message]:
            posts = [text_only.post_text(p) for p in inp.user.posts[k:]]
            ask = PROMPTS.render("holmeseye_ask.j2", stage=stage, images=[], question="", findings=findings)
            return [system, {"role": "user", "content": content([inp.header(k), *posts, ask])}]

        return build
