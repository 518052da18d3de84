"""Decorative photos with no text at all: a park, a coffee cup, a sunset, a plate of food, mountains."""

from __future__ import annotations

import math
import random
from collections.abc import Callable

from PIL import Image, ImageDraw

from localbench.benchmarks.sopri.images.draw import (
    H,
    W,
    cloth_texture,
    drop_shadow,
    quad_of,
    shaded,
    sky_gradient,
    table_top,
    vertical_gradient,
    wood_texture,
)


def _tree(d: ImageDraw.ImageDraw, rng: random.Random, x: float, base: float, s: float) -> None:
    d.rectangle((x - 6 * s, base - 70 * s, x + 6 * s, base), fill="#5b4030")
    for _ in range(6):
        r = rng.uniform(26, 40) * s
        ox, oy = x + rng.uniform(-30, 30) * s, base - 90 * s + rng.uniform(-30, 20) * s
        d.ellipse((ox - r, oy - r, ox + r, oy + r), fill=rng.choice(("#3f7a3a", "#4f8d45", "#2f6330", "#5a9a48")))


def _park(rng: random.Random) -> Image.Image:
    img = sky_gradient((W, H), rng)
    d = ImageDraw.Draw(img)
    horizon = H * rng.uniform(0.45, 0.58)
    for _ in range(rng.randrange(2, 4)):  # clouds
        cx, cy = rng.uniform(0, W), rng.uniform(20, horizon * 0.6)
        for _ in range(4):
            r = rng.uniform(18, 34)
            ox = cx + rng.uniform(-40, 40)
            d.ellipse((ox - r * 1.6, cy - r, ox + r * 1.6, cy + r), fill="#f7f9fb")
    for x in range(-20, W + 40, 36):  # the far tree line
        r = rng.uniform(24, 40)
        d.ellipse((x - r, horizon - r * 1.2, x + r, horizon + r * 0.4), fill="#4d7a4a")
    grass = vertical_gradient((W, round(H - horizon)), "#8cbf5f", "#5e9a3c")
    img.paste(grass, (0, round(horizon)))
    mid = W * rng.uniform(0.3, 0.7)
    d.polygon(
        [(mid - 8, horizon), (mid + 8, horizon), (mid + rng.uniform(60, 200), H), (mid - rng.uniform(60, 200), H)],
        fill="#d8c9a3",
    )
    for _ in range(rng.randrange(2, 5)):
        s = rng.uniform(0.8, 1.6)
        _tree(
            d,
            rng,
            rng.choice((rng.uniform(20, mid - 90), rng.uniform(mid + 90, W - 20))),
            horizon + rng.uniform(20, H - horizon - 10),
            s,
        )
    if rng.random() < 0.6:  # a bench
        bx, by = rng.uniform(40, W - 160), horizon + rng.uniform(30, 80)
        d.rectangle((bx, by, bx + 110, by + 10), fill="#7b5234")
        d.rectangle((bx, by + 16, bx + 110, by + 24), fill="#7b5234")
        d.rectangle((bx + 6, by + 24, bx + 12, by + 46), fill="#333333")
        d.rectangle((bx + 98, by + 24, bx + 104, by + 46), fill="#333333")
    return img


def _coffee(rng: random.Random) -> Image.Image:
    img, _ = table_top((W, H), rng)
    d = ImageDraw.Draw(img)
    cx, cy = W / 2 + rng.uniform(-100, 100), H / 2 + rng.uniform(-40, 40)
    drop_shadow(img, quad_of(260, 260, cx + 10, cy + 14), 12, 80, round_=True)
    d.ellipse((cx - 125, cy - 125, cx + 125, cy + 125), fill="#f6f6f4", outline="#d6d6d2", width=2)
    d.ellipse((cx - 95, cy - 95, cx + 95, cy + 95), fill="#eeeeeb")
    d.rounded_rectangle((cx + 70, cy - 18, cx + 130, cy + 18), radius=14, fill="#f4f4f2", outline="#d0d0cc")
    d.ellipse((cx - 80, cy - 80, cx + 80, cy + 80), fill="#fbfbfa", outline="#d6d6d2", width=3)
    d.ellipse((cx - 66, cy - 66, cx + 66, cy + 66), fill=rng.choice(("#8a5a36", "#7a4b2a", "#9b6a43")))
    d.ellipse((cx - 52, cy - 52, cx + 52, cy + 52), fill="#c99d72")
    d.ellipse((cx - 24, cy - 30, cx + 4, cy + 2), fill="#f3e6d2")  # a heart in the foam
    d.ellipse((cx - 4, cy - 30, cx + 24, cy + 2), fill="#f3e6d2")
    d.polygon([(cx - 23, cy - 8), (cx + 23, cy - 8), (cx, cy + 28)], fill="#f3e6d2")
    sx, sy = cx - 170 + rng.uniform(-20, 20), cy + rng.uniform(-60, 60)
    d.ellipse((sx - 18, sy - 12, sx + 18, sy + 12), fill="#c4c6c8")
    d.polygon(quad_of(90, 8, sx, sy + 50, 80), fill="#c4c6c8")
    if rng.random() < 0.7:  # a croissant
        ox, oy = W - 110 + rng.uniform(-20, 20), rng.choice((80, H - 80))
        for i in range(5):
            a = math.radians(200 + i * 35)
            x, y = ox + 45 * math.cos(a), oy + 30 * math.sin(a)
            d.ellipse((x - 26, y - 20, x + 26, y + 20), fill=shaded("#d9a15b", 0.9 + 0.05 * (i % 2)), outline="#a8692e")
    return img


def _sunset(rng: random.Random) -> Image.Image:
    horizon = round(H * rng.uniform(0.55, 0.66))
    sky = vertical_gradient(
        (W, horizon), rng.choice(("#2c3e70", "#3b2f63", "#24406e")), rng.choice(("#f39c4a", "#f5b041", "#f08a5d"))
    )
    img = Image.new("RGB", (W, H))
    img.paste(sky, (0, 0))
    d = ImageDraw.Draw(img)
    sx, r = W * rng.uniform(0.3, 0.7), rng.uniform(30, 50)
    d.ellipse((sx - r, horizon - r * 0.9, sx + r, horizon + r * 1.1), fill="#ffd98a")  # half set
    img.paste(vertical_gradient((W, H - horizon), "#c9794a", "#2b3552"), (0, horizon))
    for i in range(10):  # the sun's path on the water
        y = horizon + 8 + i * (H - horizon) / 11
        half = r * (1.1 - i * 0.07) * rng.uniform(0.7, 1.2)
        d.rectangle((sx - half, y, sx + half, y + 3), fill="#f7c77a")
    x = -10.0  # a far shore
    pts = [(x, horizon)]
    while x < W * rng.uniform(0.3, 0.5):
        x += rng.uniform(30, 70)
        pts.append((x, horizon - rng.uniform(8, 40)))
    pts.append((x + 60, horizon))
    d.polygon(pts, fill="#2a2438")
    if rng.random() < 0.6:  # a sailing boat
        bx, by = rng.uniform(W * 0.55, W * 0.9), horizon + rng.uniform(20, 50)
        d.polygon([(bx - 26, by), (bx + 26, by), (bx + 18, by + 8), (bx - 18, by + 8)], fill="#1f1b2b")
        d.polygon([(bx, by - 2), (bx, by - 60), (bx + 24, by - 4)], fill="#1f1b2b")
    return img


def _plate(rng: random.Random) -> Image.Image:
    img = cloth_texture((W, H), rng) if rng.random() < 0.5 else wood_texture((W, H), rng)
    d = ImageDraw.Draw(img)
    cx, cy, r = W / 2 + rng.uniform(-60, 60), H / 2 + rng.uniform(-20, 20), rng.uniform(165, 185)
    drop_shadow(img, quad_of(2 * r, 2 * r, cx + 8, cy + 12), 12, 80, round_=True)
    d.ellipse((cx - r, cy - r, cx + r, cy + r), fill="#fbfbf9", outline="#d8d8d4", width=2)
    d.ellipse((cx - r * 0.72, cy - r * 0.72, cx + r * 0.72, cy + r * 0.72), fill="#f1f1ee")
    for _ in range(rng.randrange(18, 28)):  # salad leaves, tomatoes, something yellow
        a, rr = rng.uniform(0, 6.28), rng.uniform(0, r * 0.55)
        x, y = cx + rr * math.cos(a), cy + rr * math.sin(a)
        kind = rng.random()
        if kind < 0.55:
            d.ellipse((x - 26, y - 14, x + 26, y + 14), fill=rng.choice(("#5e9e3a", "#78b545", "#3f7d2c")))
        elif kind < 0.8:
            d.ellipse((x - 12, y - 12, x + 12, y + 12), fill="#d64030", outline="#a52a20")
        else:
            d.ellipse((x - 8, y - 6, x + 8, y + 6), fill="#f2c94c")
    for side in (-1, 1):  # a fork and a knife
        x = cx + side * (r + 38)
        d.rounded_rectangle((x - 7, cy - 120, x + 7, cy + 120), radius=6, fill="#c8cacc", outline="#9a9ca0")
    return img


def _mountain(rng: random.Random) -> Image.Image:
    img = sky_gradient((W, H), rng)
    d = ImageDraw.Draw(img)
    for layer, (base, colour) in enumerate(((0.62, "#9fb1c4"), (0.74, "#6d8298"), (0.88, "#4b5d52"))):
        x, pts, peaks = -40.0, [(-40.0, float(H))], []
        while x < W + 40:
            peak = (x + rng.uniform(50, 110), H * base - rng.uniform(60, 200) * (1 - layer * 0.3))
            valley = (peak[0] + rng.uniform(60, 130), H * base - rng.uniform(0, 40))
            peaks.append((pts[-1], peak, valley))
            pts += [peak, valley]
            x = valley[0]
        d.polygon([*pts, (W + 40.0, float(H))], fill=colour)
        for left, (px, py), right in peaks if layer < 2 else []:  # snow on the high peaks, down a quarter of each slope
            if py < H * base - 110:
                t = 0.22
                a, b = (
                    (px + t * (left[0] - px), py + t * (left[1] - py)),
                    (px + t * (right[0] - px), py + t * (right[1] - py)),
                )
                d.polygon([a, (px, py), b, ((a[0] + b[0]) / 2 + 4, (a[1] + b[1]) / 2 - 6)], fill="#f3f6f9")
    if rng.random() < 0.5:  # a lake in front
        d.rectangle((0, H * 0.9, W, H), fill="#5f86a8")
    return img


PHOTOS: tuple[Callable[[random.Random], Image.Image], ...] = (_park, _coffee, _sunset, _plate, _mountain)
