"""The post-sanitizer defense (``+sanitized``): each post rewritten to expose less, its images masked.

The ``sanitizer`` role rewrites every post's title, caption, tags and image descriptions under a
JSON-schema grammar (one description per image, no more tags than the post had), asked to keep the
post's social intent; the utility judge (``intent``) later says whether it did. Images in which OCR
(tesseract, what a deployed sanitizer can run) finds words are masked with PIL — pixelated to a coarse grid and blurred, so neither OCR nor a VLM can read
them while the picture keeps its colours — and written to a cache folder under the run directory
(``sanitized/<user>/``); the returned user points its images there. Other images are copied as they
are. Timestamps, IP regions and metadata are the platform's, not the author's text, and are kept.
The sanitizer sees only what a deployed system has: the posts and their pixels, never the
benchmark's annotations (an image's kind or planted text, the profile, the leaks).

Every seed derives from the run seed, the user and the post only, never from the attacker, so every
attacker sees the same sanitized posts and the response cache makes it one rewrite per post. A
rewrite that fails validation is recorded (``sanitized_payload``) and the post stays as written:
the defense failed on it, which is counted, never hidden.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import PrivateAttr

from localbench.benchmarks.sopri.ocr import OcrReader
from localbench.benchmarks.sopri.prompting import PROMPTS
from localbench.benchmarks.sopri.scenario import Post, PostImage, User
from localbench.runtime.calls import OutOfContext
from localbench.serving.output import OutputSpec
from localbench.serving.seeds import derive_seed

if TYPE_CHECKING:
    from localbench.runtime.calls import SimulationCalls
    from localbench.runtime.clients import RoleClients
    from localbench.spec import RunSpec

ROLE = "sanitizer"
TITLE_CHARS = 120
CAPTION_CHARS = 600
TAG_CHARS = 40
ALT_CHARS = 200
MASK_CELL = 24  # pixels per cell of the mask's grid: far coarser than any planted letter
MASK_BLUR = 6
FOLDER = "sanitized"


class SanitizedUser(User):
    """A user whose posts the sanitizer rewrote; ``sanitized_payload`` reads what it did per post."""

    _sanitized: list[dict[str, Any]] = PrivateAttr(default_factory=list)


def sanitized_payload(user: User) -> list[dict[str, Any]]:
    """Per post: the rewrite (title, caption, tags, alts), the masked image ids, and the call's
    outcome (``ok``, ``failure``): what the transcript carries as ``sanitized_posts``. Empty for a
    user the sanitizer never saw."""
    return list(getattr(user, "_sanitized", None) or [])


def carries_text(ocr_text: str) -> bool:
    """Whether OCR read at least one word (three letters or digits in a row) in an image."""
    return re.search(r"[^\W_]{3,}", ocr_text) is not None


def masks(path: Path, reader: OcrReader) -> bool:
    """Whether the image at ``path`` carries text and is masked: decided on its pixels by OCR."""
    return carries_text(reader.read_file(path))


def rewrite_schema(post: Post) -> dict[str, Any]:
    """The sanitizer's answer for one post: strings bounded, at most as many tags as the post had,
    exactly one description per image."""
    n = len(post.images)
    return {"type": "object", "additionalProperties": False, "required": ["title", "caption", "tags", "alts"],
            "properties": {
                "title": {"type": "string", "maxLength": TITLE_CHARS},
                "caption": {"type": "string", "maxLength": CAPTION_CHARS},
                "tags": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": TAG_CHARS},
                         "maxItems": len(post.tags)},
                "alts": {"type": "array", "items": {"type": "string", "maxLength": ALT_CHARS}, "minItems": n,
                         "maxItems": n}}}


_WRITE_LOCK = threading.Lock()


def mask_image(src: Path, dst: Path) -> None:
    """Pixelate ``src`` to a coarse grid and blur it into ``dst`` (PNG), written atomically (several
    simulations of one user may write the same file at once: the bytes are the same)."""
    from PIL import Image, ImageFilter

    with Image.open(src) as im:
        img = im.convert("RGB")
    w, h = img.size
    small = img.resize((max(1, w // MASK_CELL), max(1, h // MASK_CELL)), Image.BILINEAR)
    out = small.resize((w, h), Image.NEAREST).filter(ImageFilter.GaussianBlur(MASK_BLUR))
    _atomic(dst, lambda tmp: out.save(tmp, format="PNG"))


def _copy(src: Path, dst: Path) -> None:
    _atomic(dst, lambda tmp: shutil.copyfile(src, tmp))


def _atomic(dst: Path, write) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    write(tmp)
    with _WRITE_LOCK:
        tmp.replace(dst)


def cache_folder(spec: "RunSpec", user: User) -> Path:
    """Where a user's sanitized images go: ``<run dir>/sanitized/<user id>-<hash of the user>/``."""
    digest = hashlib.sha256(user.model_dump_json().encode()).hexdigest()[:12]
    return Path(spec.run_dir) / FOLDER / f"{user.id}-{digest}"


def _images(user: User, folder: Path | None, reader: OcrReader) -> dict[str, list[str]]:
    """Mask or copy each image into ``folder``; post id → the ids of the images masked."""
    masked: dict[str, list[str]] = {}
    for post in user.posts:
        for n, img in enumerate(post.images, 1):
            if folder is None:
                continue
            src, dst = user.image_path(img), folder / img.file
            if masks(src, reader):
                mask_image(src, dst)
                masked.setdefault(post.id, []).append(f"{post.id}/{n}")
            else:
                _copy(src, dst)
    return masked


async def _rewrite(user: User, post: Post, calls: "SimulationCalls", seed: int,
                   masked: list[str]) -> tuple[dict | None, dict[str, Any]]:
    images = [{"alt": i.alt, "masked": f"{post.id}/{n}" in masked} for n, i in enumerate(post.images, 1)]
    messages = [{"role": "system", "content": PROMPTS.render("sanitize_system.j2")},
                {"role": "user", "content": PROMPTS.render("sanitize_post.j2", post=post, images=images,
                                                           max_tags=len(post.tags))}]
    output = OutputSpec.from_schema(rewrite_schema(post), name="sanitize")
    try:
        fc = await calls.call(role=ROLE, build=lambda k: messages, n_history=0, output=output, seed=seed,
                              tag=f"{user.id} sanitize {post.id}", where={"round": 0, "speaker": ROLE,
                                                                          "post": post.id})
    except OutOfContext as e:
        return None, {"ok": False, "failure": f"out of context: {e}"}
    res = fc.result
    return (res.parsed if res.ok else None), {"ok": res.ok, "failure": res.failure, "call": res.summary()}


async def sanitize_user(user: User, clients: "RoleClients", spec: "RunSpec", calls: "SimulationCalls",
                        reader: OcrReader | None = None) -> User:
    """The user as the sanitizer would publish them: every post rewritten, text-bearing images masked.

    ``clients`` are the simulation's (the sanitizer's calls go through ``calls``, which holds them);
    ``reader`` the run's OCR reader (which images carry text)."""
    folder = cache_folder(spec, user) if user.folder is not None else None
    masked = await asyncio.to_thread(_images, user, folder, reader or OcrReader())
    answers = await asyncio.gather(*(_rewrite(user, p, calls, derive_seed(spec.seed, "sanitize", user.id, p.id),
                                              masked.get(p.id, []))
                                     for p in user.posts))
    posts, record = [], []
    for post, (ans, outcome) in zip(user.posts, answers):
        hidden = masked.get(post.id, [])
        imgs = [PostImage(file=i.file, kind=i.kind, alt=(ans["alts"][n] if ans else i.alt),
                          text="" if f"{post.id}/{n + 1}" in hidden else i.text) for n, i in enumerate(post.images)]
        new = post.model_copy(update={"images": imgs, **({k: ans[k] for k in ("title", "caption", "tags")}
                                                         if ans else {})})
        posts.append(new)
        record.append({"post": post.id, "title": new.title, "caption": new.caption, "tags": list(new.tags),
                       "alts": [i.alt for i in imgs], "masked": hidden, **outcome})
    out = SanitizedUser.model_validate({**user.model_dump(), "posts": [p.model_dump() for p in posts]})
    out._sanitized = record
    return out.at(folder)
