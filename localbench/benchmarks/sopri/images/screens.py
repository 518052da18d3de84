"""A phone screenshot: a delivery-app order or a map with a pin, status bar drawn as shapes. Returns
(image, pixel bounds of the planted text, text px)."""

from __future__ import annotations

import random

from PIL import Image, ImageDraw

from localbench.benchmarks.sopri.images.draw import (
    H,
    PHONE,
    Rect,
    SMALL,
    W,
    add_props,
    draw_text,
    fit_size,
    font,
    line_step,
    map_rect,
    measure_lines,
    paper_sheet,
    place_in,
    quad_of,
    shaded,
    table_top,
    tilt_for,
    warp_onto,
)


def _status_bar(d: ImageDraw.ImageDraw, w: int, k: float, ink) -> None:
    """Clock, signal, wifi and battery as shapes."""
    y = 10 * k
    d.rounded_rectangle((16 * k, y, 56 * k, y + 10 * k), radius=max(1, round(4 * k)), fill=ink)
    x = w - 20 * k
    d.rounded_rectangle(
        (x - 22 * k, y, x, y + 11 * k), radius=max(1, round(3 * k)), outline=ink, width=max(1, round(k))
    )
    d.rectangle((x - 20 * k, y + 2 * k, x - 6 * k, y + 9 * k), fill=ink)
    d.rectangle((x + 1 * k, y + 3 * k, x + 3 * k, y + 8 * k), fill=ink)
    x -= 34 * k
    for i in range(3):
        r = (4 + 4 * i) * k
        d.arc((x - r, y + 11 * k - r, x + r, y + 11 * k + r), 225, 315, fill=ink, width=max(1, round(2 * k)))
    x -= 30 * k
    for i in range(4):
        d.rectangle((x + i * 5 * k, y + (9 - 3 * i) * k, x + i * 5 * k + 3 * k, y + 11 * k), fill=ink)


def _map(d: ImageDraw.ImageDraw, rng: random.Random, box: Rect, k: float) -> tuple[float, float]:
    """A street map in ``box``: blocks, a park, water, roads, a route and a pin; returns the pin."""
    x0, y0, x1, y1 = box
    d.rectangle(box, fill=rng.choice(("#ebe7df", "#e8eaed", "#efe9e1")))
    if rng.random() < 0.7:
        wx = rng.choice((x0, x1))
        d.polygon(
            [
                (wx, y0 + (y1 - y0) * rng.uniform(0.1, 0.5)),
                (
                    wx + (x1 - x0) * rng.uniform(0.2, 0.45) * (1 if wx == x0 else -1),
                    y0 + (y1 - y0) * rng.uniform(0.4, 0.7),
                ),
                (wx, y1),
            ],
            fill="#a9d3f5",
        )
    px0, py0 = rng.uniform(x0, x1 - 90 * k), rng.uniform(y0, y1 - 90 * k)
    d.rounded_rectangle(
        (px0, py0, px0 + rng.uniform(50, 110) * k, py0 + rng.uniform(50, 110) * k), radius=round(8 * k), fill="#c6e7c0"
    )
    xs = sorted(rng.uniform(x0, x1) for _ in range(rng.randrange(3, 5)))
    ys = sorted(rng.uniform(y0, y1) for _ in range(rng.randrange(4, 7)))
    for x in xs:
        d.line((x, y0, x + rng.uniform(-30, 30) * k, y1), fill="#ffffff", width=max(2, round(rng.choice((7, 10)) * k)))
    for y in ys:
        d.line((x0, y, x1, y + rng.uniform(-30, 30) * k), fill="#ffffff", width=max(2, round(rng.choice((7, 10)) * k)))
    a, b = (x0, rng.uniform(y0, y1)), (x1, rng.uniform(y0, y1))
    d.line((a, b), fill="#f2c96b", width=max(3, round(12 * k)))
    start = (rng.uniform(x0 + 30 * k, x1 - 30 * k), rng.uniform((y0 + y1) / 2, y1 - 30 * k))
    pin = (rng.uniform(x0 + 40 * k, x1 - 40 * k), rng.uniform(y0 + 60 * k, (y0 + y1) / 2))
    d.line([start, (start[0], pin[1]), pin], fill="#8fbaf9", width=max(2, round(6 * k)), joint="curve")
    r = 7 * k
    d.ellipse(
        (start[0] - r, start[1] - r, start[0] + r, start[1] + r),
        fill="#8fbaf9",
        outline="#ffffff",
        width=max(1, round(3 * k)),
    )
    r = 14 * k
    d.polygon(
        [(pin[0] - r * 0.8, pin[1] - r * 0.3), (pin[0] + r * 0.8, pin[1] - r * 0.3), (pin[0], pin[1] + r * 1.4)],
        fill="#e5483d",
    )
    d.ellipse((pin[0] - r, pin[1] - 2 * r, pin[0] + r, pin[1]), fill="#e5483d")
    d.ellipse((pin[0] - r * 0.4, pin[1] - r * 1.4, pin[0] + r * 0.4, pin[1] - r * 0.6), fill="#ffffff")
    return pin


def _screen(rng: random.Random, lines: list[str], k: float, px: int) -> tuple[Image.Image, Rect]:
    """A phone screen ``k`` times PHONE: a delivery app's order screen or a map with a pin, the lines
    in a card; placeholder bars, buttons and icons are shapes."""
    w, h = round(PHONE[0] * k), round(PHONE[1] * k)
    accent = rng.choice(("#1aa260", "#ff5a1f", "#e23744", "#7b3fe4", "#0a84ff"))
    img = Image.new("RGB", (w, h), "#f5f5f7")
    d = ImageDraw.Draw(img)
    f, big = font(px, "bold"), font(round(px * 1.25) if px > SMALL else px, "bold")  # a title, then the rest
    th = line_step(big) + measure_lines(lines[1:], f)[1] if len(lines) > 1 else measure_lines(lines, big)[1]
    pad = round(14 * k)
    grey = "#d5d7dc"

    def card_text(x: float, y: float) -> Rect:
        first = draw_text(d, x, y, lines[:1], big, "#1c1c1e")
        if len(lines) < 2:
            return first
        rest = draw_text(d, x, y + line_step(big), lines[1:], f, "#1c1c1e")
        return (min(first[0], rest[0]), first[1], max(first[2], rest[2]), rest[3])

    def bars(x: float, y: float, n: int, width: float) -> float:
        for i in range(n):
            d.rounded_rectangle(
                (x, y, x + width * (0.9 if i == 0 else rng.uniform(0.45, 0.8)), y + 8 * k),
                radius=max(1, round(4 * k)),
                fill=grey,
            )
            y += 18 * k
        return y

    if rng.random() < 0.5:  # a map with a bottom sheet
        sheet = th + 3 * pad + round(60 * k)
        _map(d, rng, (0, 0, w, h - sheet + 20 * k), k)
        d.rectangle((0, 0, w, 34 * k), fill="#ffffff")
        _status_bar(d, w, k, "#1c1c1e")
        d.rounded_rectangle((pad, 44 * k, w - pad, 84 * k), radius=round(20 * k), fill="#ffffff", outline=grey)
        d.ellipse((pad + 12 * k, 56 * k, pad + 26 * k, 70 * k), outline="#8e8e93", width=max(1, round(2 * k)))
        d.line((pad + 24 * k, 68 * k, pad + 30 * k, 74 * k), fill="#8e8e93", width=max(1, round(2 * k)))
        d.rounded_rectangle((pad + 40 * k, 60 * k, pad + 160 * k, 68 * k), radius=max(1, round(4 * k)), fill=grey)
        top = h - sheet
        d.rounded_rectangle((0, top, w, h + 30 * k), radius=round(18 * k), fill="#ffffff")
        d.rounded_rectangle((w / 2 - 20 * k, top + 8 * k, w / 2 + 20 * k, top + 12 * k), radius=2, fill=grey)
        rect = card_text(pad + 4 * k, top + pad + 6 * k)
        by = top + pad + th + pad + 8 * k
        d.rounded_rectangle((pad, by, w / 2 - 6 * k, by + 34 * k), radius=round(17 * k), fill=accent)
        d.rounded_rectangle(
            (w / 2 + 6 * k, by, w - pad, by + 34 * k), radius=round(17 * k), outline=accent, width=max(1, round(2 * k))
        )
    else:  # a delivery order on its way
        _status_bar(d, w, k, "#1c1c1e")
        y = 40 * k
        d.line(
            [(pad + 10 * k, y + 8 * k), (pad, y + 16 * k), (pad + 10 * k, y + 24 * k)],
            fill="#1c1c1e",
            width=max(1, round(3 * k)),
        )
        d.rounded_rectangle(
            (w / 2 - 50 * k, y + 12 * k, w / 2 + 50 * k, y + 21 * k), radius=max(1, round(4 * k)), fill=grey
        )
        d.ellipse((w - pad - 26 * k, y + 3 * k, w - pad, y + 29 * k), fill=shaded(accent, 1.6))
        y += 44 * k
        _map(d, rng, (0, y, w, y + 170 * k), k)
        y += 170 * k + pad
        for i in range(4):  # the order's progress
            x = pad + 10 * k + i * (w - 2 * pad - 20 * k) / 3
            if i:
                d.line(
                    (x - (w - 2 * pad - 20 * k) / 3 + 9 * k, y + 8 * k, x - 9 * k, y + 8 * k),
                    fill=accent if i < 3 else grey,
                    width=max(1, round(4 * k)),
                )
            d.ellipse((x - 8 * k, y, x + 8 * k, y + 16 * k), fill=accent if i < 3 else grey)
        y += 30 * k
        card_h = th + 2 * pad
        d.rounded_rectangle((pad, y, w - pad, y + card_h), radius=round(12 * k), fill="#ffffff")
        rect = card_text(2 * pad, y + pad)
        y += card_h + pad
        while y < h - 120 * k:
            d.rounded_rectangle((pad, y, w - pad, y + 56 * k), radius=round(12 * k), fill="#ffffff")
            d.rounded_rectangle(
                (2 * pad, y + 10 * k, 2 * pad + 36 * k, y + 46 * k),
                radius=round(8 * k),
                fill=rng.choice(("#f6c28b", "#b5d99c", "#f4a3a3", "#a3c4f4")),
            )
            bars(2 * pad + 48 * k, y + 14 * k, 2, w - 5 * pad - 48 * k)
            y += 56 * k + 10 * k
        d.rounded_rectangle((pad, h - 84 * k, w - pad, h - 40 * k), radius=round(22 * k), fill=accent)
    d.rounded_rectangle((w / 2 - 60 * k, h - 14 * k, w / 2 + 60 * k, h - 9 * k), radius=2, fill="#1c1c1e")
    return img, rect


def screenshot(rng: random.Random, lines: list[str], small: bool) -> tuple[Image.Image, Rect, float]:
    """A phone screenshot; small: a photo of the phone lying on a table, its screen a few inches wide."""
    if not small:
        px = fit_size(lines, "bold", rng.randrange(15, 18), (PHONE[0] - 64) / 1.25)
        return (*_screen(rng, lines, 1.0, px), px)
    k = SMALL / 16  # a phone half a screenshot's size
    screen, rect = _screen(rng, lines, k, SMALL)
    bezel = round(6 * k)
    phone, _ = paper_sheet((screen.width + 2 * bezel, screen.height + 4 * bezel), "#17171a", radius=round(16 * k))
    phone.paste(screen, (bezel, 2 * bezel))
    rect = (rect[0] + bezel, rect[1] + 2 * bezel, rect[2] + bezel, rect[3] + 2 * bezel)
    scene, top = table_top((W, H), rng)
    w, h = phone.size
    centre = place_in(rng, (w, h), top, 10)
    add_props(scene, rng, 0.6, top, (centre[0] - w / 2, centre[1] - h / 2, centre[0] + w / 2, centre[1] + h / 2), n=2)
    m = warp_onto(scene, phone, quad_of(w, h, *centre, *tilt_for(rng, True, 3, 0.03)), 4)
    return scene, map_rect(m, rect), SMALL
