"""What the scenes share: sizes and fonts, colours, the text block that reports where it drew, the
perspective warp that maps those bounds, and backgrounds (sky, table, props) kept light so tesseract
reads the text (the rules are in the package docstring)."""

from __future__ import annotations

import io
import math
import random
from functools import lru_cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageColor, ImageDraw, ImageFilter, ImageFont


W, H = 640, 480  # a photo; a screenshot is a phone screen, PHONE
PHONE = (360, 720)
WIDTH = 560  # wrap()'s default measure: generate.py wraps a cue's lines with it before rendering
SIZE = 28
SMALL = 8  # px, bold: a small cue. Read whole, tesseract misses 8 px letters (it reads 9 px ones); cropped and
#           enlarged it reads them, if they are crisp: unturned, on whole pixels, lines 1.7 apart. (Drawn larger
#           and warped down, turned 8 px letters are misread about one time in eight.)
COLOURS = 256  # a palette PNG; fewer colours merge the grey edges of 8 px letters (64: a third misread)
FONT_DIR = Path("/usr/share/fonts/truetype/dejavu")
FACES = {"bold": "DejaVuSans-Bold.ttf", "serif": "DejaVuSerif-Bold.ttf", "mono": "DejaVuSansMono-Bold.ttf"}
FONT_FILES = ("/usr/share/fonts/truetype/liberation/LiberationSans-Bold.ttf",)

Rect = tuple[float, float, float, float]
Quad = list[tuple[float, float]]


@lru_cache(maxsize=64)
def font(size: int = SIZE, face: str = "bold") -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    """A DejaVu face (Debian: fonts-dejavu-core) where installed, else PIL's scalable default."""
    for f in (FONT_DIR / FACES[face], *map(Path, FONT_FILES)):
        if f.is_file():
            return ImageFont.truetype(str(f), size)
    return ImageFont.load_default(size=size)


def rgb(c: str | tuple[int, ...]) -> tuple[int, int, int]:
    return ImageColor.getrgb(c)[:3] if isinstance(c, str) else (c[0], c[1], c[2])


def shaded(c: str | tuple[int, ...], f: float) -> tuple[int, int, int]:
    """``c`` darker (f < 1) or lighter (f > 1, towards white)."""
    r = rgb(c)
    if f <= 1:
        return tuple(round(v * f) for v in r)  # type: ignore[return-value]
    return tuple(round(v + (255 - v) * (f - 1)) for v in r)  # type: ignore[return-value]


def png_bytes(img: Image.Image) -> bytes:
    q = img.convert("RGB").quantize(COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    buf = io.BytesIO()
    q.save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def fraction_box(rect: Rect, size: tuple[int, int], pad: float) -> list[float]:
    left, top, right, bottom = rect
    w, h = size
    return [
        round(max(0.0, (left - pad) / w), 4),
        round(max(0.0, (top - pad) / h), 4),
        round(min(1.0, (right + pad) / w), 4),
        round(min(1.0, (bottom + pad) / h), 4),
    ]


def vertical_gradient(size: tuple[int, int], top, bottom) -> Image.Image:
    """A vertical gradient from ``top`` to ``bottom`` (a sky, a wall in light)."""
    mask = Image.linear_gradient("L").resize(size)
    return Image.composite(Image.new("RGB", size, rgb(bottom)), Image.new("RGB", size, rgb(top)), mask)


def soften(img: Image.Image, factor: int = 8) -> Image.Image:
    """Out of focus: down and up again (cheaper than a wide Gaussian blur)."""
    w, h = img.size
    return img.resize((max(1, w // factor), max(1, h // factor)), Image.Resampling.BOX).resize(
        (w, h), Image.Resampling.BILINEAR
    )


def line_step(f) -> int:
    size = getattr(f, "size", SIZE)
    return round(size * (1.7 if size <= SMALL else 1.4))


def measure_lines(lines: list[str], f) -> tuple[int, int]:
    """Width and height of ``lines`` drawn by ``draw_text``."""
    w = max((f.getlength(line) for line in lines), default=0)
    return math.ceil(w), line_step(f) * (len(lines) - 1) + round(getattr(f, "size", SIZE) * 1.2)


def draw_text(
    d: ImageDraw.ImageDraw, x: float, y: float, lines: list[str], f, fill, *, align: str = "left", width: float = 0.0
) -> Rect:
    """Draw ``lines`` from (x, y) down; returns the pixel bounds of what was drawn."""
    boxes = []
    for i, line in enumerate(lines):
        lx = x + (width - f.getlength(line)) / 2 if align == "center" else x
        pos = (round(lx), round(y + i * line_step(f)))  # whole pixels: crisper small letters
        d.text(pos, line, font=f, fill=fill)
        if line.strip():
            boxes.append(d.textbbox(pos, line, font=f))
    if not boxes:
        return (x, y, x + 1, y + 1)
    return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes), max(b[3] for b in boxes))


def fit_size(lines: list[str], face: str, px: int, max_w: float, lo: int = 10) -> int:
    """``px``, or less (down to ``lo``) when the longest line would be wider than ``max_w``."""
    while px > lo and measure_lines(lines, font(px, face))[0] > max_w:
        px -= 1
    return px


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """``a x = b`` by Gaussian elimination with partial pivoting, in plain floats.

    Why not ``numpy.linalg.solve``: it runs the LAPACK/BLAS kernel the CPU (or OPENBLAS_CORETYPE)
    picks, whose last bits differ between machines, and a box's fourth decimal or a resampled pixel
    with them; the shipped suite must be the generator's output on every machine."""
    n = len(b)
    m = [[float(v) for v in row] + [float(b[i])] for i, row in enumerate(a)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[piv] = m[piv], m[col]
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            if f:
                m[r] = [x - f * y for x, y in zip(m[r], m[col])]
    x = [0.0] * n
    for r in reversed(range(n)):
        acc = m[r][n]
        for c in range(r + 1, n):
            acc -= m[r][c] * x[c]
        x[r] = acc / m[r][r]
    return x


def homography(src: Quad, dst: Quad) -> np.ndarray:
    """The 3x3 projective map that takes the four ``src`` points to the four ``dst`` points."""
    a, b = [], []
    for (x, y), (u, v) in zip(src, dst, strict=True):
        a += [[x, y, 1, 0, 0, 0, -u * x, -u * y], [0, 0, 0, x, y, 1, -v * x, -v * y]]
        b += [u, v]
    return np.array([*_solve(a, b), 1.0], float).reshape(3, 3)


def project(h: np.ndarray, points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """``points`` through the projective map ``h``, in plain floats (the same bits on every machine)."""
    m = [[float(v) for v in row] for row in h]
    out = []
    for x, y in points:
        z = m[2][0] * x + m[2][1] * y + m[2][2]
        out.append(((m[0][0] * x + m[0][1] * y + m[0][2]) / z, (m[1][0] * x + m[1][1] * y + m[1][2]) / z))
    return out


def map_rect(h: np.ndarray, rect: Rect) -> Rect:
    """The bounds of ``rect`` after the projective map ``h``."""
    left, top, right, bottom = rect
    pts = project(h, [(left, top), (right, top), (right, bottom), (left, bottom)])
    return (min(x for x, _ in pts), min(y for _, y in pts), max(x for x, _ in pts), max(y for _, y in pts))


def quad_of(w: float, h: float, cx: float, cy: float, angle: float = 0.0, taper: float = 0.0) -> Quad:
    """A ``w`` x ``h`` rectangle centred on (cx, cy), turned ``angle`` degrees, its right edge
    shortened by ``taper`` (its left edge when negative): a mild perspective."""
    lf, rf = 1 - max(0.0, -taper), 1 - max(0.0, taper)
    pts = [(-w / 2, -h / 2 * lf), (w / 2, -h / 2 * rf), (w / 2, h / 2 * rf), (-w / 2, h / 2 * lf)]
    c, s = math.cos(math.radians(angle)), math.sin(math.radians(angle))
    return [(cx + x * c - y * s, cy + x * s + y * c) for x, y in pts]


def drop_shadow(scene: Image.Image, quad: Quad, blur: float, strength: int = 55, round_: bool = False) -> None:
    """A soft shadow under ``quad`` (its bounding ellipse when ``round_``), light enough to stay background."""
    pad = int(blur * 3) + 2
    x0, y0 = max(0, int(min(x for x, _ in quad)) - pad), max(0, int(min(y for _, y in quad)) - pad)
    x1 = min(scene.width, int(max(x for x, _ in quad)) + pad)
    y1 = min(scene.height, int(max(y for _, y in quad)) + pad)
    if x1 <= x0 or y1 <= y0:
        return
    mask = Image.new("L", (x1 - x0, y1 - y0), 0)
    local = [(x - x0, y - y0) for x, y in quad]
    if round_:
        ImageDraw.Draw(mask).ellipse(bounds_of(local), fill=strength)
    else:
        ImageDraw.Draw(mask).polygon(local, fill=strength)
    scene.paste((25, 20, 15), (x0, y0, x1, y1), mask.filter(ImageFilter.GaussianBlur(blur)))


def bounds_of(pts: Quad) -> Rect:
    return (min(x for x, _ in pts), min(y for _, y in pts), max(x for x, _ in pts), max(y for _, y in pts))


def tilt_for(rng: random.Random, small: bool, angle: float, taper: float) -> tuple[float, float]:
    """A turn of up to ``angle`` degrees and a perspective ``taper`` up to ``taper``; none for a small cue
    (resampled, its 8 px letters blur past reading)."""
    a, t = rng.uniform(-angle, angle), rng.uniform(-taper, taper)
    return (0.0, 0.0) if small else (a, t)


def warp_onto(scene: Image.Image, obj: Image.Image, quad: Quad, shadow: float = 0.0) -> np.ndarray:
    """Paste the RGBA ``obj`` onto ``scene`` with its corners on ``quad`` (top-left first, clockwise);
    returns the map from ``obj``'s pixels to the scene's (for the text's bounds). An upright quad of
    ``obj``'s own size is pasted on whole pixels, not resampled."""
    w, h = obj.size
    src = [(0.0, 0.0), (float(w), 0.0), (float(w), float(h)), (0.0, float(h))]
    upright = abs(quad[0][1] - quad[1][1]) < 1e-6 and abs(quad[0][0] - quad[3][0]) < 1e-6
    if upright and abs(quad[1][0] - quad[0][0] - w) < 1e-6 and abs(quad[3][1] - quad[0][1] - h) < 1e-6:
        quad = [(round(quad[0][0]) + x, round(quad[0][1]) + y) for x, y in src]
    if shadow:
        drop_shadow(scene, [(x + shadow * 0.6, y + shadow) for x, y in quad], shadow)
    x0, y0 = math.floor(min(x for x, _ in quad)), math.floor(min(y for _, y in quad))
    x1, y1 = math.ceil(max(x for x, _ in quad)), math.ceil(max(y for _, y in quad))
    back = homography([(x - x0, y - y0) for x, y in quad], src)
    layer = obj.transform(
        (x1 - x0, y1 - y0), Image.Transform.PERSPECTIVE, tuple(back.flatten()[:8]), Image.Resampling.BICUBIC
    )
    scene.paste(layer, (x0, y0), layer)
    return homography(src, quad)


def paper_sheet(size: tuple[int, int], fill, radius: int = 0) -> tuple[Image.Image, ImageDraw.ImageDraw]:
    """A transparent RGBA canvas with a (rounded) card of ``fill`` on it, and its Draw."""
    img = Image.new("RGBA", size, (0, 0, 0, 0))
    d = ImageDraw.Draw(img)
    d.rounded_rectangle((0, 0, size[0] - 1, size[1] - 1), radius=radius, fill=rgb(fill))
    return img, d


# Light surfaces: tesseract takes the darker side of its threshold for ink, and reads a page that is mostly
# dark inverted, which loses dark print on light paper; so tables, walls, shirts and skies stay light.
WOODS = ("#e8d5b5", "#ecdcc0", "#e4cca8", "#efe2c9", "#e6d0ae")
CLOTHS = (("#f1ece2", "#d9cdb8"), ("#eef0f2", "#cfd8e2"), ("#f3eee6", "#e3cfc8"), ("#eef1ea", "#d0dcc8"))


def wood_texture(size: tuple[int, int], rng: random.Random) -> Image.Image:
    """Light planks with a few faint wavy grain lines."""
    base = rng.choice(WOODS)
    img = Image.new("RGB", size, rgb(base))
    d = ImageDraw.Draw(img)
    w, h = size
    y = -rng.randrange(60)
    while y < h:
        ph = rng.randrange(70, 120)
        plank = shaded(base, rng.uniform(0.95, 1.05))
        d.rectangle((0, y, w, y + ph), fill=plank)
        for _ in range(rng.randrange(3, 6)):
            gy, amp, period, phase = (
                y + rng.uniform(6, ph - 6),
                rng.uniform(1, 4),
                rng.uniform(120, 300),
                rng.random() * 6,
            )
            pts = [(x, gy + amp * math.sin(x / period * 6.28 + phase)) for x in range(0, w + 40, 40)]
            d.line(pts, fill=shaded(plank, rng.uniform(0.9, 0.95)), width=rng.choice((1, 2)))
        d.line((0, y + ph, w, y + ph), fill=shaded(base, 0.8), width=2)
        y += ph
    return img


def cloth_texture(size: tuple[int, int], rng: random.Random) -> Image.Image:
    """A light tablecloth with broad woven stripes."""
    light, stripe = rng.choice(CLOTHS)
    img = Image.new("RGB", size, rgb(light))
    d = ImageDraw.Draw(img)
    x = rng.randrange(40)
    while x < size[0]:
        sw = rng.randrange(18, 40)
        d.rectangle((x, 0, x + sw, size[1]), fill=rgb(stripe))
        x += sw + rng.randrange(50, 110)
    return img


def table_top(size: tuple[int, int], rng: random.Random) -> tuple[Image.Image, Rect]:
    """A light table top (wood, a tablecloth or a plain desk) and, past its far edge, the dark floor:
    returns the image and the part of it that is table. (The dark band keeps tesseract's threshold
    between dark and light: on an all-light picture it splits the lights, table from paper.)"""
    if rng.random() < 0.55:
        img = wood_texture(size, rng)
    elif rng.random() < 0.5:
        img = cloth_texture(size, rng)
    else:
        img = Image.new("RGB", size, rng.choice(("#e6e2da", "#dde3e6", "#ebe5d9", "#d9ded4")))
    w, h = size
    d = ImageDraw.Draw(img)
    floor = rng.choice(("#2e2a28", "#263238", "#3a2f2a", "#2f3330"))
    side = rng.choice(("top", "top", "left", "right"))
    depth = rng.uniform(0.13, 0.17)
    if side == "top":
        edge = h * depth
        d.rectangle((0, 0, w, edge), fill=floor)
        d.rectangle((0, edge - 3, w, edge), fill=shaded(floor, 1.6))
        return img, (0, edge, w, h)
    edge = w * depth * 0.8
    x0, x1 = (0, edge) if side == "left" else (w - edge, w)
    d.rectangle((x0, 0, x1, h), fill=floor)
    return img, (x1, 0, w, h) if side == "left" else (0, 0, x0, h)


def add_props(img: Image.Image, rng: random.Random, k: float, area: Rect, avoid: Rect, n: int = 3) -> None:
    """A few things on the table ``area``, away from ``avoid``: a cup of coffee, a pen, coins, a phone, keys."""
    d = ImageDraw.Draw(img)
    ax, ay, w, h = area[0], area[1], area[2] - area[0], area[3] - area[1]
    spots = [(x, y) for x in (0.12, 0.5, 0.88) for y in (0.15, 0.85)] + [(0.1, 0.5), (0.9, 0.5)]
    rng.shuffle(spots)
    placed = 0
    for fx, fy in spots:
        cx, cy = ax + fx * w + rng.uniform(-20, 20) * k, ay + fy * h + rng.uniform(-20, 20) * k
        r = 62 * k
        if avoid[0] - r < cx < avoid[2] + r and avoid[1] - r < cy < avoid[3] + r:
            continue
        what = rng.choice(("cup", "pen", "coins", "phone", "keys"))
        if what == "cup":
            drop_shadow(img, quad_of(2 * r, 2 * r, cx + 4 * k, cy + 6 * k), 6 * k, round_=True)
            d.ellipse((cx - r, cy - r, cx + r, cy + r), fill="#f4f4f2", outline="#cfcfcf")
            c = 0.62 * r
            d.ellipse((cx - c, cy - c, cx + c, cy + c), fill="#fbfbfb", outline="#d8d8d8", width=max(1, int(3 * k)))
            c = 0.5 * r
            d.ellipse((cx - c, cy - c, cx + c, cy + c), fill=rng.choice(("#c89b6d", "#d2a679", "#bf9060")))  # milky
            d.rounded_rectangle((cx + 0.58 * r, cy - 0.1 * r, cx + 0.9 * r, cy + 0.1 * r), radius=3, fill="#eeeeec")
        elif what == "pen":
            length, angle = rng.uniform(110, 150) * k, rng.uniform(20, 70) * rng.choice((-1, 1))
            q = quad_of(length, 9 * k, cx, cy, angle)
            d.polygon(q, fill=rng.choice(("#5b7fc0", "#c05b5b", "#8a8a8a")))
            d.line([q[1], q[2]], fill="#c8c8c8", width=max(1, int(3 * k)))
        elif what == "coins":
            for _ in range(rng.randrange(2, 4)):
                ox, oy, cr = cx + rng.uniform(-25, 25) * k, cy + rng.uniform(-20, 20) * k, rng.uniform(11, 15) * k
                d.ellipse(
                    (ox - cr, oy - cr, ox + cr, oy + cr),
                    fill=rng.choice(("#c9a74a", "#b8b8b0", "#b07c4b")),
                    outline="#b8a478",
                )
                d.ellipse((ox - cr * 0.7, oy - cr * 0.7, ox + cr * 0.7, oy + cr * 0.7), outline="#c2b088")
        elif what == "phone":
            q = quad_of(70 * k, 140 * k, cx, cy, rng.uniform(-25, 25))
            drop_shadow(img, [(x + 3 * k, y + 5 * k) for x, y in q], 5 * k)
            d.polygon(q, fill=rng.choice(("#c9d3dc", "#e3c9c9", "#cfd9c4", "#d8d2c4")))  # face down, a light case
            d.polygon(quad_of(22 * k, 22 * k, *q[0], 0), fill="#b4b4b4")  # the camera
        else:
            d.ellipse((cx - 14 * k, cy - 14 * k, cx + 14 * k, cy + 14 * k), outline="#bdbdbd", width=max(1, int(4 * k)))
            q = quad_of(60 * k, 14 * k, cx + 40 * k, cy + 8 * k, rng.uniform(10, 40))
            d.polygon(q, fill="#c8c8c2", outline="#b0b0aa")
        placed += 1
        if placed >= n:
            return


def place_in(rng: random.Random, size: tuple[float, float], area: Rect, margin: float = 16.0) -> tuple[float, float]:
    """A centre for an object of ``size`` that keeps it inside ``area``, off-centre by chance."""
    (w, h), (x0, y0, x1, y1) = size, area
    room_x, room_y = max(0.0, (x1 - x0 - w) / 2 - margin), max(0.0, (y1 - y0 - h) / 2 - margin)
    return (x0 + x1) / 2 + rng.uniform(-room_x, room_x), (y0 + y1) / 2 + rng.uniform(-room_y, room_y)


def sky_gradient(size: tuple[int, int], rng: random.Random) -> Image.Image:
    top, low = rng.choice(
        (("#b3d3f0", "#eef5fa"), ("#bcd5ec", "#f3f6f8"), ("#c8d3dc", "#f0f2f4"), ("#aacdee", "#e6f0f8"))
    )
    return vertical_gradient(size, top, low)
