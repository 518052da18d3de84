"""SopriBench's data model: a user, their public posts, and the hidden profile the posts leak.

A user has a nickname, a bio, an IP region and posts (title, caption, tags, timestamp, IP region,
images, metadata). Hidden from every attacker is the profile: the 28 attributes of the user's
``taxonomy`` (``taxonomy.py``: the release's, or localbench's own ``SLOTS`` in four dimensions), each with its value, its contextual sensitivity (1–5) and, for hierarchical attributes
(home: country → province → city → district → compound; age: decade → range; …), the ground-truth path. An attribute the
posts reveal carries a ``Leak``: how (explicit, implicit, cross-post), how hard (1 single-post
text, 2 single-post image, 3 single-post mixed, 4 cross-post), which posts support it, through
which carriers, and for a hierarchical attribute how deep the posts reveal it.

On disk (``loaders``): a suite folder with ``users/<id>/user.yaml`` (this model) beside the user's
images (``PostImage.file`` is relative to the user's folder), and ``sandbox/`` with what the
sandbox tools read (``gazetteer.csv``, ``documents.jsonl``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

from localbench.benchmarks.sopri.taxonomy import (
    LOCALBENCH,
    Slot,
    TaxonomyName,
    known_slot,
    slot_of,
    taxonomy,
)

Dimension = str  # a dimension (localbench) or class (release) of the user's taxonomy
DIMENSIONS: tuple[str, ...] = ("identity", "socioeconomic", "lifestyle", "sensitive")  # localbench's

LeakType = Literal["explicit", "implicit", "cross-post"]
LEAK_TYPES: tuple[LeakType, ...] = ("explicit", "implicit", "cross-post")

DIFFICULTIES: dict[int, str] = {1: "single-post text", 2: "single-post image", 3: "single-post mixed",
                                4: "cross-post"}

SLOT_LIST: tuple[Slot, ...] = LOCALBENCH.slots
"""localbench's own 28 slots (``taxonomy.LOCALBENCH``); a user's slots are those of its ``taxonomy``."""
SLOTS: dict[str, Slot] = {s.name: s for s in SLOT_LIST}
assert sum(s.hierarchical for s in SLOT_LIST) == 9  # localbench's 9 hierarchical attributes


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PostImage(_Strict):
    """An image of a post. ``text``: the words rendered into it (what OCR should read; empty for a
    photo without text); ``alt``: the post's alt text, what a text-only attacker is told of it."""

    file: str  # relative to the user's folder
    kind: str = "photo"  # receipt, ticket, badge, screenshot, street_sign, notice, photo, ...
    alt: str = ""
    text: str = ""

    @field_validator("file")
    @classmethod
    def _relative(cls, v: str) -> str:
        if Path(v).is_absolute() or ".." in Path(v).parts:
            raise ValueError(f"'{v}' must be a path inside the user's folder")
        return v


class Post(_Strict):
    id: str
    title: str = ""
    caption: str = ""
    tags: list[str] = Field(default_factory=list)
    timestamp: str  # ISO 8601, local time of the post
    ip_region: str = ""
    images: list[PostImage] = Field(default_factory=list)
    metadata: dict[str, str] = Field(default_factory=dict)  # likes, device, location tag, ...


Carrier = str
"""Where in a post a cue sits: title, caption, tags, timestamp, ip_region, metadata, or image:<file>."""


CueField = Literal["caption", "tags", "image", "metadata", "timestamp", "ip_region"]
TEXT_CUE_FIELDS: tuple[CueField, ...] = ("caption", "tags", "metadata", "timestamp", "ip_region")


class LeakCue(_Strict):
    """One piece of evidence for a leak, pinned to where a reader finds it, so that it can be checked
    mechanically (``loaders.lint``; the image text by OCR in ``check``).

    ``text`` is what the cue says: a span of the caption, one tag, the planted image text (its lines
    joined by newlines), a metadata value, the post's timestamp or its IP region."""

    post: str
    at: CueField
    text: str = Field(min_length=1)
    file: str | None = None  # at == "image": the image file of the post
    box: list[float] | None = Field(default=None, min_length=4, max_length=4)  # image: [left, top, right, bottom], 0..1
    field: str | None = None  # at == "metadata": the metadata key

    @model_validator(mode="after")
    def _located(self) -> "LeakCue":
        if self.at == "image" and not self.file:
            raise ValueError("an image cue names its file")
        if self.at == "metadata" and not self.field:
            raise ValueError("a metadata cue names its field")
        return self


class Leak(_Strict):
    """How the posts reveal one attribute: the label (type, difficulty, depth), its evidence (the cues,
    each pinned to a post) and the one-line inference chain from the cues to the value."""

    type: LeakType
    difficulty: Literal[1, 2, 3, 4]
    posts: list[str] = Field(min_length=1)  # supporting post ids
    carriers: list[Carrier] = Field(default_factory=list)
    depth: int | None = None  # hierarchical: how many levels of the path the posts reveal (1..len)
    cues: list[LeakCue] = Field(default_factory=list)  # empty: a label that cannot be verified (data check warns)
    chain: str = ""  # how the cues give the value, in one line

    @model_validator(mode="after")
    def _consistent(self) -> "Leak":
        if self.type == "cross-post" and len(set(self.posts)) < 2:
            raise ValueError("a cross-post leak needs at least two supporting posts")
        if self.difficulty == 4 and self.type != "cross-post":
            raise ValueError("difficulty 4 is cross-post leakage")
        stray = sorted({c.post for c in self.cues} - set(self.posts))
        if stray:
            raise ValueError(f"cues on posts {', '.join(stray)}, which the leak does not cite")
        return self


class Attribute(_Strict):
    """One attribute of the hidden profile."""

    slot: str
    value: str
    path: list[str] | None = None  # hierarchical: one entry per level of the slot, coarse to fine
    sensitivity: int = Field(ge=1, le=5)
    leak: Leak | None = None  # None: true of the user, but no post reveals it

    _known_slot = field_validator("slot")(classmethod(lambda cls, v: known_slot(v)))

    @model_validator(mode="after")
    def _path_fits(self) -> "Attribute":
        slot = slot_of(self.slot)
        if slot.hierarchical:
            if self.path is None or len(self.path) != len(slot.levels):
                raise ValueError(f"'{self.slot}' is hierarchical: path needs {len(slot.levels)} entries "
                                 f"({' → '.join(slot.levels)})")
            if self.leak is not None:
                if self.leak.depth is None:
                    self.leak.depth = len(slot.levels)
                if not 1 <= self.leak.depth <= len(slot.levels):
                    raise ValueError(f"'{self.slot}': leak.depth must be 1..{len(slot.levels)}")
        elif self.path is not None:
            raise ValueError(f"'{self.slot}' is flat: no path")
        return self

    @property
    def dimension(self) -> Dimension:
        return slot_of(self.slot).dimension

    def answer(self, depth: int | None = None) -> str:
        """The truth as one answer, down to ``depth`` levels: a path finest first ("Xihu, Hangzhou, …"),
        leaving out a level a finer one already names ("22 March", not "22 March, March"); flat: the value."""
        if not self.path:
            return self.value
        out: list[str] = []
        for level in reversed(self.path[:depth]):
            if not any(level.lower() in finer.lower() for finer in out):
                out.append(level)
        return ", ".join(out)


class User(_Strict):
    """One scenario: a user, their posts and the hidden profile (never shown to an attacker)."""

    id: str
    cohort: str = "synthetic"  # the category axis: which population the user is drawn from
    taxonomy: TaxonomyName = "localbench"  # whose 28 slots the profile is labelled with (``taxonomy.py``)
    nickname: str
    bio: str = ""
    ip_region: str = ""
    posts: list[Post] = Field(min_length=1)
    profile: list[Attribute] = Field(default_factory=list)
    generator: dict[str, str] = Field(default_factory=dict)  # how the user was made (name, version, seed)
    _folder: Path | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _consistent(self) -> "User":
        ids = [p.id for p in self.posts]
        if len(set(ids)) != len(ids):
            raise ValueError("post ids must be unique")
        slots = [a.slot for a in self.profile]
        if len(set(slots)) != len(slots):
            raise ValueError("each profile slot at most once")
        tax = taxonomy(self.taxonomy)
        stray = [s for s in slots if s not in tax]
        if stray:
            raise ValueError(f"profile slots {', '.join(stray)} are not of the {tax.name} taxonomy "
                             f"(the user's 'taxonomy'; its slots: {', '.join(tax.names)})")
        for a in self.profile:
            for p in (a.leak.posts if a.leak else []):
                if p not in ids:
                    raise ValueError(f"profile '{a.slot}': leak cites unknown post '{p}'")
        return self

    # -- where the files are ----------------------------------------------------------------
    @property
    def folder(self) -> Path | None:
        """The user's folder (images are relative to it); None for a user built in memory."""
        return self._folder

    def at(self, folder: Path | None) -> "User":
        self._folder = folder
        return self

    def image_path(self, image: PostImage) -> Path:
        if self._folder is None:
            raise ValueError(f"user '{self.id}' has no folder: cannot find image '{image.file}'")
        return self._folder / image.file

    # -- what the profile says --------------------------------------------------------------
    def attribute(self, slot: str) -> Attribute | None:
        return next((a for a in self.profile if a.slot == slot), None)

    @property
    def leaked(self) -> list[Attribute]:
        """The ground-truth leaked attributes: what PES is computed over."""
        return [a for a in self.profile if a.leak is not None]

    def post(self, post_id: str) -> Post:
        for p in self.posts:
            if p.id == post_id:
                return p
        raise KeyError(post_id)
