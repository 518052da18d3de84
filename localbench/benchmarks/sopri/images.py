"""Post images rendered with PIL: receipts, tickets, badges, screenshots, street signs, notices (text
an OCR tool can read) and plain photos (shapes, no text).

The planted text is drawn large (a TrueType font from Debian's fonts-dejavu, else PIL's own scalable
default), dark on a light ground, unrotated, so tesseract reads it back; what is drawn is exactly the
image's ``PostImage.text`` (its lines joined by newlines). Images are palette PNGs at most 640 px
wide with a few colours, so a suite of a hundred stays small. Rendering is deterministic: the same
lines, kind and seed give the same bytes (on one Pillow version).
"""

from __future__ import annotations

import io
import random
from functools import lru_cache
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

TEXT_KINDS = ("receipt", "ticket", "badge", "screenshot", "street_sign", "notice")
KINDS = (*TEXT_KINDS, "photo")
WIDTH = 560
FONT_FILES = ("/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf", "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
              "/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf")
SIZE = 28

# kind -> (background, band, text colour)
_STYLE: dict[str, tuple[str, str, str]] = {
    "receipt": ("#ffffff", "#dddddd", "#111111"),
    "ticket": ("#fff6d8", "#e0a030", "#1a1a1a"),
    "badge": ("#ffffff", "#2b5fa8", "#0d1b2a"),
    "screenshot": ("#f4f4f6", "#3a3a48", "#101018"),
    "street_sign": ("#ffffff", "#1e6b3a", "#0b2a16"),
    "notice": ("#fffbe9", "#b03a2e", "#1c1c1c"),
}


@lru_cache(maxsize=4)
def font(size: int = SIZE) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """DejaVu Sans Bold where installed (Debian: fonts-dejavu-core), else PIL's scalable default."""
    for f in FONT_FILES:
        if Path(f).is_file():
            return ImageFont.truetype(f, size)
    return ImageFont.load_default(size=size)


def wrap(text: str, width: int = WIDTH - 48, size: int = SIZE) -> list[str]:
    """Words into lines that fit ``width`` pixels at ``size``."""
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


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.convert("P", palette=Image.Palette.ADAPTIVE, colors=16).save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def render_text(kind: str, lines: list[str]) -> bytes:
    """A text-bearing image of ``kind`` with exactly ``lines`` drawn on it, as PNG bytes."""
    if kind not in TEXT_KINDS:
        raise ValueError(f"'{kind}' is not a text image kind ({', '.join(TEXT_KINDS)})")
    bg, band, ink = _STYLE[kind]
    f = font()
    line_h = SIZE + 16
    height = 40 + 24 + line_h * len(lines) + 24
    img = Image.new("RGB", (WIDTH, height), bg)
    d = ImageDraw.Draw(img)
    d.rectangle((0, 0, WIDTH, 28), fill=band)  # a coloured top band says what kind of paper it is
    if kind in ("badge", "street_sign", "ticket"):
        d.rectangle((4, 4, WIDTH - 5, height - 5), outline=band, width=4)
    y = 40 + 12
    for line in lines:
        d.text((24, y), line, font=f, fill=ink)
        y += line_h
    if kind in ("receipt", "ticket"):  # a perforated edge, drawn below the text
        for x in range(0, WIDTH, 24):
            d.ellipse((x, height - 10, x + 8, height - 2), fill=band)
    return _png(img)


def render_photo(seed: int, palette: tuple[str, ...] = ("#7fb3d5", "#f5cba7", "#82e0aa", "#f9e79f", "#d7bde2")) -> bytes:
    """A 'photo' without text: a sky, a ground and a few shapes drawn from ``seed``."""
    rng = random.Random(seed)
    img = Image.new("RGB", (WIDTH, 360), rng.choice(palette))
    d = ImageDraw.Draw(img)
    d.rectangle((0, 220, WIDTH, 360), fill=rng.choice(palette))
    for _ in range(5):
        x, y, r = rng.randrange(0, WIDTH), rng.randrange(40, 300), rng.randrange(15, 60)
        shape = d.ellipse if rng.random() < 0.5 else d.rectangle
        shape((x - r, y - r, x + r, y + r), fill=rng.choice(palette), outline="#333333")
    return _png(img)


def render(kind: str, lines: list[str], seed: int = 0) -> bytes:
    """PNG bytes of one post image: the planted ``lines`` for a text kind, shapes for a photo."""
    return render_photo(seed) if kind == "photo" else render_text(kind, lines)
