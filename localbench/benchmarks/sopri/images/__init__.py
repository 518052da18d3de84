"""Post images for SopriBench, drawn with PIL as photo-like scenes: a street with a sign on a wall,
a receipt or a ticket on a table, a badge on a lanyard, a phone screenshot (a delivery app or a
map), a notice on a door or a noticeboard, a shop front, a classroom whiteboard, and photos that
carry no text at all.

Why scenes and not text on a card: an attacker should have to look at the picture to find the cue,
as in a real post, and some cues are small enough that reading the whole picture misses them and
only the crop/zoom tool finds them (``small=True``: 8 px letters in a wider shot; see SMALL).
The planted text is exactly ``lines``, one drawn row each, at a realistic size for the scene, dark
on a light ground, turned or skewed a little (a few degrees, a mild perspective; a small cue stays
upright and on whole pixels); nothing else in a scene is a word (icons, barcodes and placeholder
bars are shapes). ``Rendered.box`` is the region, as fractions of the image, that holds every
planted line (with a margin); ``None`` for a photo.

The scenes are drawn so that tesseract (``ocr.py``: grayscale, one global Otsu threshold, ``--psm
3``) reads a normal-size cue from the whole picture, which constrains them more than the eye does:

- each has one dark mass away from the text (a road, a floor past the table's edge, a jacket, the
  backs of chairs): without it the threshold splits the light colours (table from paper), and a
  picture that is mostly dark after thresholding is read inverted;
- everything else is light or pastel: tesseract guesses the text size from the 75th percentile of
  the dark blobs' heights, so a few dark shapes taller than a letter make it drop a short cue's
  letters as noise;
- nothing dark encloses the text (a sign's frame, a board's frame): letters inside a closed
  outline are taken as part of that outline;
- no rows of small separate marks near the text (dotted rules, lane dashes, loose barcode bars):
  they are taken for lines of text. (The receipt's rules are solid, its barcode stands on a line.)

Images are palette PNGs at most 640 px wide without per-pixel noise, so a suite of a hundred stays
small. Rendering is deterministic: the same kind, lines, seed and ``small`` give the same bytes (on
one Pillow version); the seed varies colours, positions and props.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from PIL import Image

from localbench.benchmarks.sopri.images.draw import (
    Rect,
    SIZE,
    WIDTH,
    font,
    fraction_box,
    png_bytes,
)
from localbench.benchmarks.sopri.images.paper import badge, notice, receipt, ticket
from localbench.benchmarks.sopri.images.photos import PHOTOS
from localbench.benchmarks.sopri.images.places import classroom, shop_front, street_sign
from localbench.benchmarks.sopri.images.screens import screenshot


TEXT_KINDS = ("receipt", "ticket", "badge", "screenshot", "street_sign", "notice", "shop_front", "classroom")
KINDS = (*TEXT_KINDS, "photo")
ALT = {
    "receipt": "a photo of a printed receipt on a table",
    "ticket": "a photo of a ticket lying on a table",
    "badge": "a photo of a badge on a lanyard",
    "screenshot": "a screenshot of a phone app",
    "street_sign": "a photo of a street with a sign on a wall",
    "notice": "a photo of a printed notice on a door or a noticeboard",
    "shop_front": "a photo of a shop front with a sign above the window",
    "classroom": "a photo of a classroom with writing on the whiteboard",
    "photo": "a photo",
}


@dataclass(frozen=True)
class Rendered:
    png: bytes
    box: list[float] | None  # [left, top, right, bottom], fractions of the image: every planted line; None for a photo


def wrap(text: str, width: int = WIDTH - 48, size: int = SIZE) -> list[str]:
    """Words into lines that fit ``width`` pixels at ``size`` (bold)."""
    f = font(size)
    lines: list[str] = []
    for para in text.split("\n"):
        line = ""
        for word in para.split():
            trial = f"{line} {word}".strip()
            if line and f.getlength(trial) > width:
                lines.append(line)
                line = word
            else:
                line = trial
        lines.append(line)
    return lines


def render_scene(kind: str, lines: list[str], seed: int = 0, *, small: bool = False) -> Rendered:
    """A photo-like image of ``kind`` with exactly ``lines`` drawn on it (nothing for a photo), and
    the region that holds them. ``small``: the text is a small part of a wider shot."""
    if kind not in KINDS:
        raise ValueError(f"'{kind}' is not an image kind ({', '.join(KINDS)})")
    rng = random.Random(f"{kind}/{seed}/{int(small)}")
    if kind == "photo":
        return Rendered(png_bytes(rng.choice(PHOTOS)(rng)), None)
    img, rect, px = SCENES[kind](rng, list(lines), small)
    drawn = any(line.strip() for line in lines)
    return Rendered(png_bytes(img), fraction_box(rect, img.size, max(4.0, 0.6 * px)) if drawn else None)


def render(kind: str, lines: list[str], seed: int = 0) -> bytes:
    """PNG bytes of one post image: the planted ``lines`` for a text kind, a scene without text for a photo."""
    return render_scene(kind, lines, seed).png


SCENES: dict[str, Callable[[random.Random, list[str], bool], tuple[Image.Image, Rect, float]]] = {
    "receipt": receipt,
    "ticket": ticket,
    "badge": badge,
    "screenshot": screenshot,
    "street_sign": street_sign,
    "notice": notice,
    "shop_front": shop_front,
    "classroom": classroom,
}
