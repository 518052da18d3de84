"""Paper scenes: a receipt or a ticket on a table, a badge on a lanyard, a notice on a door or a
noticeboard. Each returns (image, pixel bounds of the planted text, text px)."""

from __future__ import annotations

import random

from PIL import Image, ImageDraw

from localbench.benchmarks.sopri.images.draw import (
    H,
    Rect,
    SMALL,
    W,
    add_props,
    draw_text,
    fit_size,
    font,
    map_rect,
    measure_lines,
    paper_sheet,
    place_in,
    quad_of,
    shaded,
    soften,
    table_top,
    tilt_for,
    vertical_gradient,
    warp_onto,
)


def receipt(rng: random.Random, lines: list[str], small: bool) -> tuple[Image.Image, Rect, float]:
    """A till receipt on a table: a logo mark, rules, the lines, a barcode, a torn edge. (The rules are
    solid and the barcode's bars stand on a line: rows of separate dots or bars outnumber the
    letters, and tesseract then takes the letters for noise.)"""
    px = SMALL if small else fit_size(lines, "mono", rng.randrange(15, 18), W * 0.7)
    f = font(px, "bold" if small else "mono")
    tw, th = measure_lines(lines, f)
    pad, gap, logo, bar = round(px * 1.4), round(px * 1.5), round(px * 2.2), round(px * 2.2)
    w = max(tw + 2 * pad, px * 12)
    h = pad + logo + 5 * gap + th + bar + pad + px
    paper, d = paper_sheet((w, h), rng.choice(("#fbfaf4", "#f7f5ee", "#fffdf8")))
    teeth = max(3, px // 3)  # the torn bottom edge
    d.polygon(
        [(x, h - 1 - (teeth if (x // teeth) % 2 else 0)) for x in range(0, w + teeth, teeth)] + [(w, h), (0, h)],
        fill=(0, 0, 0, 0),
    )
    ink = rng.choice(("#1a1a1a", "#222233", "#2a2420"))
    cx, y, thin = w / 2, pad, max(1, px // 8)
    if rng.random() < 0.5:
        d.ellipse((cx - logo / 2, y, cx + logo / 2, y + logo), outline=ink, width=max(1, px // 6))
        d.ellipse((cx - logo / 5, y + logo * 0.3, cx + logo / 5, y + logo * 0.7), fill=ink)
    else:
        d.rounded_rectangle((cx - logo, y + logo * 0.15, cx + logo, y + logo * 0.85), radius=px // 3, fill=ink)
        d.polygon(
            [(cx - logo * 0.4, y + logo * 0.7), (cx, y + logo * 0.3), (cx + logo * 0.4, y + logo * 0.7)], fill="#fbfaf4"
        )
    y += logo + gap
    d.line((pad, y, w - pad, y), fill=ink, width=thin)
    rect = draw_text(d, pad, y + gap, lines, f, ink)
    y += 2 * gap + th
    d.line((pad, y, w - pad, y), fill=ink, width=thin)
    y += gap
    x = pad + px
    while x < w - pad - px:
        bw = rng.choice((1, 1, 2, 3)) * thin
        d.rectangle((x, y, x + bw - 1, y + bar), fill=ink)
        x += bw + rng.choice((1, 2, 2, 3)) * thin
    d.rectangle((pad + px, y + bar - thin, x, y + bar), fill=ink)
    scene, top = table_top((W, H), rng)
    k = px / 16
    centre = place_in(rng, (w, h), top)
    add_props(scene, rng, k, top, (centre[0] - w / 2, centre[1] - h / 2, centre[0] + w / 2, centre[1] + h / 2))
    m = warp_onto(scene, paper, quad_of(w, h, *centre, *tilt_for(rng, small, 3, 0.03)), 6 * k)
    return scene, map_rect(m, rect), px


def ticket(rng: random.Random, lines: list[str], small: bool) -> tuple[Image.Image, Rect, float]:
    """A train or event ticket on a table: a colour band, the lines, a stub with a square code past
    a perforation. (The code is one blob, dark with light cells, not a scatter of squares.)"""
    px = SMALL if small else fit_size(lines, "bold", rng.randrange(16, 20), W * 0.6)
    f = font(px, "bold")
    tw, th = measure_lines(lines, f)
    pad, band, stub = round(px * 1.3), round(px * 0.9), round(px * 5.5)
    main_w = max(tw + pad + 3 * px, px * 10)  # wider on the stub's side: its code is no part of a line
    w, h = main_w + stub, max(band + th + 3 * pad, round(px * 6.5))
    colour = rng.choice(("#c0392b", "#1f6fb2", "#2e8b57", "#8e44ad", "#d35400", "#16a085"))
    paper, d = paper_sheet((w, h), rng.choice(("#fffaf0", "#fdfdfb", "#f8f3e6")), radius=max(2, px // 3))
    stub_left = rng.random() < 0.5
    sx0, mx0 = (0, stub) if stub_left else (main_w, 0)
    d.rectangle((mx0, 0, mx0 + main_w - 1, band), fill=colour)
    d.rectangle((mx0 + pad, h - pad, mx0 + main_w - pad, h - pad + max(1, px // 8)), fill=colour)
    d.rectangle((sx0, 0, sx0 + stub - 1, h), fill=shaded(colour, 1.8))
    cell, n = max(2, round(px * 0.35)), 9
    qx, qy = sx0 + (stub - cell * n) / 2, (h - cell * n) / 2
    d.rectangle((qx, qy, qx + cell * n - 1, qy + cell * n - 1), fill="#1a1a1a")
    for i in range(1, n - 1):
        for j in range(1, n - 1):
            if rng.random() < 0.35 and not (i in (1, n - 2) and j in (1, n - 2)):
                d.rectangle(
                    (qx + i * cell, qy + j * cell, qx + (i + 1) * cell - 1, qy + (j + 1) * cell - 1),
                    fill=shaded(colour, 1.8),
                )
    perf = stub if stub_left else main_w
    hole = max(1.0, px * 0.13)
    for yy in range(round(px * 0.9), h - round(px * 0.6), max(4, round(px * 0.55))):
        d.ellipse((perf - hole, yy - hole, perf + hole, yy + hole), fill=(0, 0, 0, 0))
    notch = px * 0.5
    for yy in (0, h):
        d.ellipse((perf - notch, yy - notch, perf + notch, yy + notch), fill=(0, 0, 0, 0))
    rect = draw_text(d, mx0 + (3 * px if stub_left else pad), band + pad, lines, f, "#161616")
    scene, top = table_top((W, H), rng)
    k = px / 17
    centre = place_in(rng, (w, h), top)
    add_props(scene, rng, k, top, (centre[0] - w / 2, centre[1] - h / 2, centre[0] + w / 2, centre[1] + h / 2), n=2)
    m = warp_onto(scene, paper, quad_of(w, h, *centre, *tilt_for(rng, small, 2, 0.04)), 5 * k)
    return scene, map_rect(m, rect), px


def _office(rng: random.Random, size: tuple[int, int]) -> Image.Image:
    """An out-of-focus office: a wall, a bright window, shelves, a plant."""
    w, h = size
    img = vertical_gradient(size, rng.choice(("#eef1f3", "#f1ebe2", "#e6ecf0")), rng.choice(("#d3d7da", "#d9cfc2", "#cbd3d9")))
    d = ImageDraw.Draw(img)
    wx = rng.uniform(0, w * 0.6)
    d.rectangle((wx, h * 0.05, wx + w * rng.uniform(0.25, 0.4), h * 0.6), fill="#f4f8fb")
    for _ in range(rng.randrange(2, 4)):
        x, y = rng.uniform(0, w), rng.uniform(h * 0.2, h * 0.8)
        d.rectangle(
            (x, y, x + rng.uniform(80, 200), y + rng.uniform(40, 120)),
            fill=rng.choice(("#b7a58f", "#a3adb5", "#c2c6ca", "#c9b08f")),
        )
    x, y = rng.uniform(0, w), rng.uniform(h * 0.3, h * 0.7)
    for _ in range(6):
        r = rng.uniform(20, 45)
        ox, oy = x + rng.uniform(-40, 40), y + rng.uniform(-40, 40)
        d.ellipse((ox - r, oy - r, ox + r, oy + r), fill=rng.choice(("#7fae6f", "#8fbd7f", "#6f9f62")))
    return soften(img, 10)


def badge(rng: random.Random, lines: list[str], small: bool) -> tuple[Image.Image, Rect, float]:
    """A staff badge in a clear holder on a lanyard, on a light shirt under a dark open jacket (the
    dark mass), against a blurred office; small: the person a few metres away."""
    px = SMALL if small else fit_size(lines, "bold", rng.randrange(15, 19), W * 0.55)
    f = font(px, "bold")
    tw, th = measure_lines(lines, f)
    pad = round(px * 1.1)
    colour = rng.choice(("#9dbbe0", "#e0a3a3", "#a3d1b5", "#c4b3e0", "#9fd3d9", "#edc48f"))
    band, photo = round(px * 2.2), (round(px * 4), round(px * 5))
    w = max(tw + 2 * pad, photo[0] + 4 * pad, round(px * 10))
    h = band + pad + photo[1] + pad + th + pad + round(px * 1.2)
    card, d = paper_sheet((w, h), "#fdfdfd", radius=max(2, px // 2))
    d.rounded_rectangle((0, 0, w - 1, band), radius=max(2, px // 2), fill=colour)
    d.rectangle((0, band // 2, w - 1, band), fill=colour)
    d.rounded_rectangle(
        (w / 2 - px * 1.2, band * 0.25, w / 2 + px * 1.2, band * 0.25 + px * 0.45),
        radius=max(1, px // 5),
        fill=(0, 0, 0, 0),
    )  # the slot for the clip
    x0, y0 = (w - photo[0]) / 2, band + pad
    d.rectangle((x0, y0, x0 + photo[0], y0 + photo[1]), fill=rng.choice(("#dfe5ea", "#e6dfd6", "#dfe6dc")))
    hc, hr = (w / 2, y0 + photo[1] * 0.38), photo[0] * 0.2  # a silhouette: head and shoulders
    d.ellipse((hc[0] - hr, hc[1] - hr, hc[0] + hr, hc[1] + hr), fill="#b9c2cb")
    d.pieslice(
        (x0 + photo[0] * 0.12, y0 + photo[1] * 0.62, x0 + photo[0] * 0.88, y0 + photo[1] * 1.35),
        180,
        360,
        fill="#b9c2cb",
    )
    d.rectangle((x0, y0 + photo[1], x0 + photo[0], y0 + photo[1] + 2), fill="#fdfdfd")
    rect = draw_text(d, 0, y0 + photo[1] + pad, lines, f, "#14181f", align="center", width=w)
    d.rectangle((0, h - round(px * 0.7), w - 1, h - 1), fill=colour)
    rim = round(px * 0.5)
    holder, hd = paper_sheet((w + 2 * rim, h + 2 * rim), (238, 242, 245), radius=px)
    hd.rounded_rectangle((0, 0, holder.width - 1, holder.height - 1), radius=px, outline=(208, 214, 220), width=2)
    holder.paste(card, (rim, rim), card)
    rect = (rect[0] + rim, rect[1] + rim, rect[2] + rim, rect[3] + rim)
    k = px / 16
    scene = _office(rng, (W, H))
    d = ImageDraw.Draw(scene)
    shirt = rng.choice(("#dfe8f2", "#f4f1ea", "#e9dcd2", "#d9e3d6", "#eef0f2", "#c9d8e8", "#efe3c8"))
    jacket = rng.choice(("#2b2f3a", "#3a3330", "#23303f", "#343a33"))
    cx = W / 2 + rng.uniform(-40, 40)
    if small:  # shoulders and chest of someone a few metres away: the jacket's outline surrounds the shirt
        top, sw = H * rng.uniform(0.2, 0.3), W * rng.uniform(0.3, 0.36)
        d.rectangle((cx - 22, 0, cx + 22, top + 30), fill=rng.choice(("#e0b898", "#c08a68", "#f1cfb2")))
        d.rounded_rectangle((cx - sw, top, cx + sw, H + 100), radius=70, fill=jacket)
        d.polygon([(cx - 40, top), (cx + 40, top), (cx + sw * 0.35, H), (cx - sw * 0.35, H)], fill=shirt)
        neck = top
    else:  # a close-up of the chest: the shirt between the open jacket's two sides
        d.rectangle((0, 0, W, H), fill=shirt)
        for side in (-1, 1):
            edge = cx + side * W * rng.uniform(0.33, 0.38)
            d.polygon([(edge, 0), (edge + side * 40, H), (W / 2 + side * W, H), (W / 2 + side * W, 0)], fill=jacket)
        for _ in range(2):  # folds
            fx = cx + rng.uniform(-0.25, 0.25) * W
            d.line([(fx, 0), (fx + rng.uniform(-40, 40), H)], fill=shaded(shirt, 0.94), width=18)
        neck = -10.0
    ch, cw = holder.height, holder.width
    cy = neck + 45 + ch / 2 if small else max(H * 0.56, H - ch / 2 - 20)
    centre = (cx + rng.uniform(-20, 20) * k, min(cy, H - ch / 2 - 8))
    m = warp_onto(scene, holder, quad_of(cw, ch, *centre, *tilt_for(rng, small, 3, 0.03)), 4 * k)
    d = ImageDraw.Draw(scene)
    ax, ay = map_rect(m, (holder.width / 2, rim + band * 0.25, holder.width / 2, rim + band * 0.25))[:2]
    strap = rng.choice(("#9db4d6", "#d9a0a0", "#a0cfb0", "#e6cc88", "#c4c4c4"))
    half, clip_top = max(3.0, 10 * k), ay - 26 * k
    for side in (-1, 1):
        top_x = ax + side * (rng.uniform(25, 35) if small else rng.uniform(90, 130) * k)
        d.polygon(
            [(top_x - half, neck), (top_x + half, neck), (ax + half * 0.6, clip_top), (ax - half * 0.6, clip_top)],
            fill=strap,
        )
    d.rounded_rectangle(
        (ax - 7 * k, clip_top - 6 * k, ax + 7 * k, ay + 2 * k),
        radius=max(1, round(3 * k)),
        fill="#d4d7db",
        outline="#b9bdc2",
    )
    d.ellipse(
        (ax - 5 * k, clip_top - 16 * k, ax + 5 * k, clip_top - 4 * k), outline="#b9bdc2", width=max(1, round(2 * k))
    )
    return scene, map_rect(m, rect), px


def notice(rng: random.Random, lines: list[str], small: bool) -> tuple[Image.Image, Rect, float]:
    """A printed notice taped to a door, or pinned to a cork noticeboard among other papers, above a
    dark floor; small: seen from across the corridor."""
    k = 0.45 if small else 1.0
    px = SMALL if small else fit_size(lines, "bold", rng.randrange(16, 21), W * 0.55)
    f = font(px, "bold")
    tw, th = measure_lines(lines, f)
    pad = round(px * 1.4)
    colour = rng.choice(("#e8a59c", "#9cc0e8", "#a5d6a7", "#c9b3e6", "#e6c88a"))
    w = max(tw + 2 * pad, round(px * 12))
    h = max(round(min(w * 1.3, H * (0.7 if not small else 0.3))), th + 2 * pad + round(px * 5.5))
    paper, d = paper_sheet((w, h), rng.choice(("#fdfdfb", "#fffbea", "#f7f7f2")))
    d.rectangle((0, 0, w - 1, round(px * 0.8)), fill=colour)
    top = round(px * 0.8) + pad + round((h - th - 2 * pad - px * 5.5) * rng.uniform(0.05, 0.3))
    rect = draw_text(d, 0, top, lines, f, "#151515", align="center", width=w)
    iy, r = rect[3] + pad * 1.5, px * 1.1  # an icon under the text: a drop, a triangle or a ring
    shape = rng.randrange(3)
    if shape == 0:
        d.ellipse((w / 2 - r, iy + r * 0.6, w / 2 + r, iy + 2.6 * r), fill=colour)
        d.polygon(
            [(w / 2 - r * 0.85, iy + r * 1.2), (w / 2, iy - r * 0.4), (w / 2 + r * 0.85, iy + r * 1.2)], fill=colour
        )
    elif shape == 1:
        d.polygon(
            [(w / 2 - r * 1.2, iy + 2 * r), (w / 2, iy), (w / 2 + r * 1.2, iy + 2 * r)],
            outline=colour,
            width=max(1, px // 4),
        )
    else:
        d.ellipse((w / 2 - r, iy, w / 2 + r, iy + 2 * r), outline=colour, width=max(1, px // 4))
    d.rectangle((pad, h - round(px * 1.6), w - pad, h - round(px * 1.6) + max(1, px // 6)), fill="#d0d0d0")
    wall = rng.choice(("#ece7db", "#dfe4e7", "#f1ebdf", "#dde3d6"))
    scene = vertical_gradient((W, H), shaded(wall, 1.05), shaded(wall, 0.95))
    sd = ImageDraw.Draw(scene)
    floor = H * (0.88 if not small else 0.84)
    if rng.random() < 0.5:  # a door, its frame and panels pale
        dw = max(w * 1.6, W * (0.67 if not small else 0.37))
        dx = W / 2 + rng.uniform(-60, 60) * k
        door = (dx - dw / 2, floor - H * (1.15 if not small else 0.62), dx + dw / 2, floor)
        sd.rectangle((door[0] - 12 * k, door[1] - 12 * k, door[2] + 12 * k, floor), fill=shaded(wall, 0.92))
        dc = rng.choice(("#e3cdb0", "#cfdbe6", "#d6e0c8", "#ecd2cc", "#eeeae0"))
        sd.rectangle(door, fill=dc)
        for py in (0.08, 0.55):
            ph = (door[3] - door[1]) * 0.35
            sd.rectangle(
                (
                    door[0] + dw * 0.12,
                    door[1] + (door[3] - door[1]) * py,
                    door[2] - dw * 0.12,
                    door[1] + (door[3] - door[1]) * py + ph,
                ),
                outline=shaded(dc, 0.92),
                width=max(2, round(5 * k)),
            )
        hx = door[2] - dw * 0.08 if rng.random() < 0.5 else door[0] + dw * 0.08
        sd.rounded_rectangle(
            (hx - 5 * k, (door[1] + door[3]) / 2 - 8 * k, hx + 5 * k, (door[1] + door[3]) / 2 + 30 * k),
            radius=max(1, round(4 * k)),
            fill="#d4d4cf",
        )
        eye = door[1] + (door[3] - door[1]) * rng.uniform(0.3, 0.4)
        centre = (dx + rng.uniform(-0.1, 0.1) * (dw - w), min(max(eye, h / 2 + 12), floor - h / 2 - 12))
        pinned = False
    else:  # a cork board, pale wood frame, other papers with placeholder print
        bw = max(w * 2.2, W * (0.9 if not small else 0.45))
        bh = max(h * 1.3, H * (0.78 if not small else 0.4))
        bx = W / 2 + rng.uniform(-1, 1) * max(0.0, (W - bw) / 2)
        by = min(floor - bh / 2 - 14 * k, H * 0.42 + rng.uniform(-1, 1) * max(0.0, (H - bh) / 2 - 10))
        board = (bx - bw / 2, by - bh / 2, bx + bw / 2, by + bh / 2)
        sd.rectangle((board[0] - 10 * k, board[1] - 10 * k, board[2] + 10 * k, board[3] + 10 * k), fill="#d6b991")
        cork = rng.choice(("#e8d3b0", "#e4cca6", "#ead8b8"))
        sd.rectangle(board, fill=cork)
        for _ in range(160):
            x, y = rng.uniform(board[0], board[2]), rng.uniform(board[1], board[3])
            sd.ellipse((x - 1.5, y - 1.5, x + 1.5, y + 1.5), fill=shaded(cork, 0.9))
        centre = (bx + rng.uniform(-0.2, 0.2) * (bw - w), by + rng.uniform(-0.15, 0.15) * max(0.0, bh - h))
        for _ in range(rng.randrange(3, 6)):
            ow, oh = rng.uniform(0.6, 1.0) * w * 0.7, rng.uniform(0.6, 1.0) * h * 0.6
            ox = rng.choice(
                (
                    rng.uniform(board[0] + 4, centre[0] - w / 2 - ow - 6 * k),
                    rng.uniform(centre[0] + w / 2 + 6 * k, board[2] - ow - 4),
                )
            )
            oy = rng.uniform(board[1] + 4, max(board[1] + 4, board[3] - oh - 4))
            if ox < board[0] or ox + ow > board[2]:
                continue
            sd.rectangle(
                (ox, oy, ox + ow, oy + oh), fill=rng.choice(("#fff7b0", "#dcecff", "#ffffff", "#ffe0e0", "#e3f5dc"))
            )
            for i in range(int(oh // (14 * k)) - 2):
                sd.rectangle(
                    (ox + 8 * k, oy + (12 + 14 * i) * k, ox + ow * rng.uniform(0.4, 0.9), oy + (16 + 14 * i) * k),
                    fill="#cfcfcf",
                )
        pinned = True
    sd.rectangle((0, floor, W, H), fill=rng.choice(("#4a4039", "#3d4145", "#51463d")))
    quad = quad_of(w, h, *centre, *tilt_for(rng, small, 2, 0.04))
    m = warp_onto(scene, paper, quad, 3 * k)
    for x, y in quad[:2]:  # pins or tape on the top corners
        if pinned:
            x += px if x < centre[0] else -px
            y += px * 0.8
            sd.ellipse(
                (x - px * 0.4, y - px * 0.4, x + px * 0.4, y + px * 0.4), fill=rng.choice(("#d03030", "#2060c0"))
            )
        else:
            sd.polygon(quad_of(px * 3, px * 1.1, x, y, 40 if x < centre[0] else -40), fill=(240, 232, 186))
    return scene, map_rect(m, rect), px
