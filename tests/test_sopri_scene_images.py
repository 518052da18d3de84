"""SopriBench's photo-like post images (the images package), read back with the project's own OCR (tesseract).

A normal cue is read both from the whole picture and from its ``box``; a small one (``small=True``)
is missed by a whole-picture read and found by reading its ``box``, which OcrReader enlarges, as
the crop tool does. Photos carry no word. Lines are compared after keeping only [a-z0-9].
"""

from __future__ import annotations

import io
import re

import pytest
from PIL import Image

from localbench.benchmarks.sopri import images
from localbench.benchmarks.sopri.images import ALT, KINDS, TEXT_KINDS, Rendered, render, render_scene, wrap
from localbench.benchmarks.sopri.ocr import OcrReader

CUES = [
    ["Mirebeau Dermatology Clinic", "FOLLOW-UP APPOINTMENT"],
    ["TRAIN Mirebeau - Lisket", "COACH 6 SEAT 42"],
    ["Atlas Tower"],
    ["Willow Heights", "PROPERTY MANAGEMENT", "WATER SHUT-OFF THURSDAY"],
]
SEEDS = (0, 1, 2)
# every text kind with three seeds, each seed with another cue (so each kind meets three of the four)
CASES = [(kind, seed, CUES[(i + seed) % len(CUES)]) for i, kind in enumerate(TEXT_KINDS) for seed in SEEDS]


def norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.casefold())


def found(lines: list[str], text: str) -> list[bool]:
    return [norm(line) in norm(text) for line in lines]


@pytest.fixture(scope="module")
def reader() -> OcrReader:
    return OcrReader()


@pytest.mark.parametrize(("kind", "seed", "lines"), CASES, ids=[f"{k}-{s}" for k, s, _ in CASES])
def test_a_normal_cue_is_read_from_the_whole_picture_and_from_its_box(reader, kind, seed, lines):
    got = render_scene(kind, lines, seed)
    whole, boxed = reader.read(got.png), reader.read(got.png, got.box)
    assert all(found(lines, whole)), (whole, got.box)
    assert all(found(lines, boxed)), (boxed, got.box)


@pytest.mark.parametrize(("kind", "seed", "lines"), CASES, ids=[f"{k}-{s}" for k, s, _ in CASES])
def test_a_small_cue_needs_the_crop(reader, kind, seed, lines):
    got = render_scene(kind, lines, seed, small=True)
    whole, boxed = reader.read(got.png), reader.read(got.png, got.box)
    assert not all(found(lines, whole)), whole  # at least one line is missed without the crop
    assert all(found(lines, boxed)), (boxed, got.box)
    left, top, right, bottom = got.box
    assert (right - left) * (bottom - top) < 0.05  # a small part of the frame


def test_photos_carry_no_word(reader):
    for seed in range(10):  # the five scenes, each more than once
        got = render_scene("photo", ["Atlas Tower"], seed)  # lines are ignored for a photo
        assert got.box is None
        text = reader.read(got.png)
        assert not re.findall(r"[A-Za-z]{4,}", text), (seed, text)


def test_rendering_is_deterministic_and_the_seed_varies_it():
    for kind in KINDS:
        for small in (False, True):
            first = render_scene(kind, CUES[0], 5, small=small)
            assert render_scene(kind, CUES[0], 5, small=small) == first
            assert render_scene(kind, CUES[0], 6, small=small).png != first.png
        assert render(kind, CUES[0], 5) == render_scene(kind, CUES[0], 5).png


def test_images_are_small_palette_pngs_at_most_640_wide():
    for kind in KINDS:
        for seed in SEEDS:
            for small in (False, True):
                got = render_scene(kind, CUES[seed], seed, small=small)
                img = Image.open(io.BytesIO(got.png))
                assert img.format == "PNG" and img.mode == "P" and img.width <= 640, (kind, img.size, img.mode)
                assert len(got.png) <= 120 * 1024, (kind, seed, small, len(got.png))


def test_the_box_is_a_region_of_the_image():
    for kind in TEXT_KINDS:
        for seed in SEEDS:
            for small in (False, True):
                box = render_scene(kind, CUES[seed], seed, small=small).box
                assert box is not None and len(box) == 4, (kind, box)
                left, top, right, bottom = box
                assert 0 <= left < right <= 1 and 0 <= top < bottom <= 1, (kind, seed, small, box)


def test_the_public_names_callers_use():
    assert set(TEXT_KINDS) == {"receipt", "ticket", "badge", "screenshot", "street_sign", "notice", "shop_front",
                               "classroom"}
    assert KINDS[:-1] == TEXT_KINDS and KINDS[-1] == "photo" and set(ALT) == set(KINDS)
    assert all(isinstance(alt, str) and alt and "\n" not in alt for alt in ALT.values())
    assert isinstance(render_scene("receipt", ["PAID"]), Rendered)
    assert render_scene("receipt", [""]).box is None  # nothing drawn, nothing to point at
    with pytest.raises(ValueError, match="not an image kind"):
        render_scene("selfie", ["x"])
    lines = wrap("OAT MILK 1L " * 12)
    assert len(lines) > 1 and all(images.font().getlength(line) <= images.WIDTH - 48 for line in lines)
