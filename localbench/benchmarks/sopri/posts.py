"""A user's public posts as an attacker model's input: text, and images as pixels or as OCR text.

The profile header (nickname, bio, IP region) and each post (title, caption, tags, timestamp, IP
region, metadata) are rendered as text by templates (``prompts/profile.j2``, ``prompts/post.j2``).
An image goes in as an image part when the model takes images (``AttackContext.vision``);
otherwise as the text-only fallback: the post's alt text plus what tesseract reads in the image,
read once per image (``ocr.OcrReader`` caches it, across runs too). What the attacker got is
recorded in its transcript as ``image_input``: ``pixels``, ``ocr-text`` or ``none`` (no images).

Nothing here shows the hidden profile: only what the user posted publicly.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from localbench.benchmarks.sopri.prompting import PROMPTS
from localbench.benchmarks.sopri.ocr import OcrReader
from localbench.benchmarks.sopri.tools import image_files, image_index
from localbench.serving.messages import ContentPart, image_part, text_part

if TYPE_CHECKING:
    from localbench.benchmarks.sopri.scenario import Post, User
    from localbench.serving.messages import Content

ImageInput = Literal["pixels", "ocr-text", "none"]


def image_input_of(user: User, vision: bool) -> ImageInput:
    """How this user's images reach an attacker that does (not) take images."""
    if not image_index(user):
        return "none"
    return "pixels" if vision else "ocr-text"


def carriers_of(post: Post) -> list[str]:
    """Where in this post a cue can sit (``scenario.Carrier``), images as ``image:<id>``."""
    out = [c for c, present in (("title", post.title), ("caption", post.caption), ("tags", post.tags),
                                ("timestamp", True), ("ip_region", post.ip_region), ("metadata", post.metadata))
           if present]
    return out + [f"image:{post.id}/{n}" for n in range(1, len(post.images) + 1)]


@dataclass
class PostsInput:
    """One user's posts ready to show an attacker; ``ocr``: image id → text read (text-only fallback)."""

    user: User
    vision: bool
    ocr: dict[str, str] = field(default_factory=dict)
    text_only: bool = False  # the TextLLM baseline: post text and platform fields, no image content at all

    @classmethod
    async def prepare(cls, user: User, vision: bool, reader: OcrReader) -> PostsInput:
        """Read every image once (in worker threads) when the model cannot see them."""
        ocr: dict[str, str] = {}
        files = image_files(user) if not vision else {}
        if files:
            texts = await asyncio.gather(*(asyncio.to_thread(reader.read_file, f) for f in files.values()))
            ocr = dict(zip(files, texts))
        return cls(user, vision, ocr)

    @classmethod
    def text_of(cls, user: User) -> PostsInput:
        """The paper's TextLLM input: each post's title, caption, hashtags, time and IP region; no
        image of any kind (no pixels, no alt text, no OCR) and no other metadata."""
        return cls(user, False, {}, text_only=True)

    @property
    def image_input(self) -> ImageInput:
        return "none" if self.text_only else image_input_of(self.user, self.vision)

    # -- text ----------------------------------------------------------------------------------
    def header(self, dropped: int = 0) -> str:
        return PROMPTS.render("profile.j2", user=self.user, n_posts=len(self.user.posts), dropped=dropped)

    def post_text(self, post: Post) -> str:
        if self.text_only:
            return PROMPTS.render("post.j2", post=post.model_copy(update={"metadata": {}}), images=[], vision=False)
        images = [{"id": f"{post.id}/{n}", "alt": img.alt, "attached": self.vision,
                   "ocr": self.ocr.get(f"{post.id}/{n}") if not self.vision else None}
                  for n, img in enumerate(post.images, 1)]
        return PROMPTS.render("post.j2", post=post, images=images, vision=self.vision)

    # -- parts ---------------------------------------------------------------------------------
    def post_parts(self, post: Post) -> list[ContentPart]:
        """A post's text, then (for a VLM) its images in order."""
        parts: list[ContentPart] = [text_part(self.post_text(post))]
        if self.vision and not self.text_only and self.user.folder is not None:
            parts += [image_part(path=self.user.image_path(img)) for img in post.images]
        return parts

    def posts_parts(self, posts: Sequence[Post]) -> list[ContentPart]:
        return [p for post in posts for p in self.post_parts(post)]


def content(parts: Sequence[ContentPart | str]) -> Content:
    """Message content from parts (strings are text): adjacent texts joined by a blank line; a plain
    string when there is no image, so a text-only engine sees exactly what it always did."""
    out: list[ContentPart] = []
    for p in parts:
        part = text_part(p) if isinstance(p, str) else p
        if part["type"] == "text" and not part["text"].strip():  # type: ignore[typeddict-item]
            continue
        if part["type"] == "text" and out and out[-1]["type"] == "text":
            out[-1] = text_part(out[-1]["text"] + "\n\n" + part["text"])  # type: ignore[typeddict-item]
        else:
            out.append(part)
    if all(p["type"] == "text" for p in out):
        return "\n\n".join(p["text"] for p in out)  # type: ignore[typeddict-item]
    return out
