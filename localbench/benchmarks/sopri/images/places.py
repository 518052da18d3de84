"""Scenes of places: a street with a sign on a wall, a shop front, a classroom whiteboard. Each
returns (image, pixel bounds of the planted text, text px)."""

from __future__ import annotations

import random

from PIL import Image, ImageDraw

from localbench.benchmarks.sopri.images.draw import (
    H,
    Rect,
    SMALL,
    W,
    draw_text,
    fit_size,
    font,
    homography,
    map_rect,
    measure_lines,
    paper_sheet,
    project,
    quad_of,
    rgb,
    shaded,
    sky_gradient,
    tilt_for,
    vertical_gradient,
    warp_onto,
)


def _windows(d: ImageDraw.ImageDraw, rng: random.Random, area: Rect, k: float, avoid: list[Rect]) -> None:
    """Rows of windows with frames and sills in ``area``, none over an ``avoid`` rectangle."""
    x0, y0, x1, y1 = area
    ww, wh = rng.uniform(40, 56) * k, rng.uniform(56, 72) * k
    gx, gy = ww * rng.uniform(0.7, 1.1), wh * 0.6
    glass = rng.choice(("#b9cad8", "#c4d3df", "#adc0cf", "#cdd8e0"))
    frame = rng.choice(("#f2f2ee", "#e8e0cf", "#dcdcd6"))
    cols = max(1, int((x1 - x0 + gx) // (ww + gx)))
    left = x0 + (x1 - x0 - cols * ww - (cols - 1) * gx) / 2
    y = y0 + gy * 0.6
    while y + wh < y1:
        for c in range(cols):
            x = left + c * (ww + gx)
            r = (x - 4 * k, y - 4 * k, x + ww + 4 * k, y + wh + 10 * k)
            if any(r[0] < a[2] and a[0] < r[2] and r[1] < a[3] and a[1] < r[3] for a in avoid):
                continue
            d.rectangle((x, y, x + ww, y + wh), fill=frame)
            b = max(1.0, 4 * k)
            d.rectangle((x + b, y + b, x + ww - b, y + wh - b), fill=glass)
            d.polygon(
                [(x + b, y + wh - b), (x + ww * 0.6, y + b), (x + ww - b, y + b), (x + b, y + wh * 0.7)],
                fill=shaded(glass, 1.18),
            )
            d.line((x + ww / 2, y + b, x + ww / 2, y + wh - b), fill=frame, width=max(1, round(3 * k)))
            d.rectangle((x - 4 * k, y + wh, x + ww + 4 * k, y + wh + 6 * k), fill=shaded(frame, 0.8))
        y += wh + gy


def street_sign(rng: random.Random, lines: list[str], small: bool) -> tuple[Image.Image, Rect, float]:
    """A street corner: a facade facing the camera with the sign on its wall, a street running away
    to a vanishing point beside it, pavement and the road in front (the dark mass)."""
    k = 0.45 if small else 1.0
    px = SMALL if small else fit_size(lines, "bold", rng.randrange(19, 24), W * 0.5)
    f = font(px, "bold")
    tw, th = measure_lines(lines, f)
    pad = round(px * 0.9)
    scene = sky_gradient((W, H), rng)
    d = ImageDraw.Draw(scene)
    ground = H * (0.8 if not small else 0.76)
    road = ground + 36 * k + 10
    left_street = rng.random() < 0.5
    split = W * rng.uniform(0.22, 0.34)
    fx0, fx1 = (split, W) if left_street else (0, W - split)
    vp = ((split * 0.45) if left_street else (W - split * 0.45), ground - H * 0.16)
    far = rng.choice(("#e3d6c0", "#d9ccb8", "#e6ddd0", "#d5d8d2"))  # the side street's far wall, in perspective
    edge = 0 if left_street else W
    wall_quad = [(edge, -10.0), (vp[0], vp[1] - 60 * k), (vp[0], vp[1] + 12), (edge, ground + 40)]
    end = rng.choice(("#e6dccb", "#dfe3e6", "#eadbc8"))  # a building closing the far end of the street
    gap = (min(edge, fx0 if left_street else fx1), max(edge, fx0 if left_street else fx1))
    d.rectangle((gap[0], vp[1] - 110 * k, gap[1], vp[1] + 12), fill=end)
    d.rectangle((gap[0], vp[1] + 12, gap[1], ground), fill="#dcd7cd")  # the side street's pavements
    for i in range(4):
        wx = vp[0] + (i - 1.5) * 18 * k
        d.rectangle((wx - 5 * k, vp[1] - 90 * k, wx + 5 * k, vp[1] - 70 * k), fill=shaded(end, 0.9))
    d.polygon(wall_quad, fill=far)
    hm = homography([(0, 0), (1, 0), (1, 1), (0, 1)], wall_quad)
    for i in range(1, 5):
        for j in range(1, 4):
            u0, u1, v0, v1 = i / 5 - 0.07, i / 5 + 0.03, j / 4 - 0.12, j / 4 - 0.02
            d.polygon(project(hm, [(u0, v0), (u1, v0), (u1, v1), (u0, v1)]), fill=shaded(far, 0.88))
    asphalt = rng.choice(("#4a4d52", "#3f4247", "#54565a"))
    sign_w, sign_h = tw + 2 * pad, th + 2 * pad
    floor_h, ground_h = rng.uniform(80, 100) * k, rng.uniform(105, 125) * k
    cut = fx0 + (fx1 - fx0) * rng.uniform(0.45, 0.7) if rng.random() < 0.6 else fx1
    walls = [(fx0, cut), (cut, fx1)] if cut < fx1 else [(fx0, fx1)]  # one or two buildings face the camera
    colours = []
    for bx0, bx1 in walls:
        top = max(-20.0, ground - ground_h - rng.randrange(3, 7) * floor_h)
        colours.append(rng.choice(("#e9dcc2", "#ecc6b0", "#e0d8ca", "#e3cfb3", "#f1eadb", "#d6ded9", "#e8d0a8")))
        d.rectangle((bx0, top, bx1, ground), fill=colours[-1])
        d.rectangle((bx0, top, bx1, top + 8 * k), fill=shaded(colours[-1], 0.9))
    (bx0, bx1), colour = walls[0], colours[0]
    sx = rng.uniform(bx0 + 24 * k + sign_w / 2, max(bx0 + 24 * k + sign_w / 2, bx1 - 24 * k - sign_w / 2))
    sy = ground - ground_h - rng.uniform(0.3, 0.6) * floor_h
    sign_rect = (sx - sign_w / 2 - 8 * k, sy - sign_h / 2 - 8 * k, sx + sign_w / 2 + 8 * k, sy + sign_h / 2 + 8 * k)
    for wx0, wx1 in walls:
        _windows(
            d,
            rng,
            (wx0 + 12 * k, max(-20.0, ground - ground_h - 6 * floor_h), wx1 - 12 * k, ground - ground_h),
            k,
            [sign_rect],
        )
    door_x = rng.uniform(bx0 + 20 * k, max(bx0 + 20 * k, bx1 - 80 * k))  # the ground floor: a door, a window
    d.rectangle((door_x, ground - 90 * k, door_x + 44 * k, ground), fill=rng.choice(("#c9a98c", "#a9bfd0", "#b5c9a8")))
    d.ellipse((door_x + 34 * k, ground - 48 * k, door_x + 39 * k, ground - 43 * k), fill="#e9d9a0")
    for wx0, wx1 in walls:
        gx = wx0 + 16 * k if wx0 + 16 * k + 90 * k < door_x or wx0 != bx0 else door_x + 64 * k
        if gx + 90 * k < wx1 - 10 and not (gx < door_x + 44 * k and door_x < gx + 90 * k):
            d.rectangle(
                (gx, ground - 80 * k, gx + 90 * k, ground - 14 * k),
                fill="#c3d1dc",
                outline="#eeeeea",
                width=max(1, round(3 * k)),
            )
    pipe = bx1 - 6 * k if bx1 < W else bx0 + 6 * k
    d.rectangle((pipe - 3 * k, -5, pipe + 3 * k, ground), fill=shaded(colour, 0.88))
    d.rectangle((0, ground, W, road), fill="#dcd7cd")  # pavement, kerb, road and its centre line
    d.rectangle((0, road - max(2, 5 * k), W, road), fill="#c2bdb3")
    d.rectangle((0, road, W, H), fill=asphalt)  # no lane markings: each would be one more blob taller than a letter
    near = fx0 if left_street else fx1  # the side street, joining the road: one dark blob
    d.polygon(
        [
            (near, road),
            (vp[0] + 4 * (1 if near > edge else -1), vp[1] + 12),
            (vp[0] - 4 * (1 if near > edge else -1), vp[1] + 12),
            (edge, road),
        ],
        fill=asphalt,
    )
    if rng.random() < 0.7:  # a street lamp
        lx = rng.uniform(20, W - 20)
        if abs(lx - sx) < sign_w / 2 + 20 * k:
            lx = sx + (sign_w / 2 + 30 * k) * (1 if sx < W / 2 else -1)
        d.rectangle((lx - 3 * k, ground - 260 * k, lx + 3 * k, ground + 30 * k), fill="#b9bdc2")
        d.rounded_rectangle(
            (lx - 12 * k, ground - 272 * k, lx + 12 * k, ground - 256 * k), radius=max(1, round(4 * k)), fill="#b9bdc2"
        )
    plate, ink = rng.choice(
        (
            ("#f4f4ef", "#1d3557"),
            ("#fdf6e3", "#262626"),
            ("#e9eff5", "#0f2a44"),
            ("#ffffff", "#14532d"),
            ("#f3ecd9", "#4a1c1c"),
        )
    )
    border = rng.choice(("#9db8d8", "#a8cfa8", "#dba8a8", "#c4c4c4", "#d9c48f"))  # pale: a dark frame hides the letters
    sign, sd = paper_sheet((sign_w, sign_h), border, radius=max(2, px // 3))
    bw = max(2, round(px * 0.18))
    sd.rounded_rectangle((bw, bw, sign.width - 1 - bw, sign.height - 1 - bw), radius=max(1, px // 4), fill=plate)
    rect = draw_text(sd, 0, pad, lines, f, ink, align="center", width=sign.width)
    m = warp_onto(scene, sign, quad_of(sign_w, sign_h, sx, sy, *tilt_for(rng, small, 2.5, 0.06)), 3 * k)
    return scene, map_rect(m, rect), px


FASCIAS = (
    ("#f3ead7", "#1f3b2d"),
    ("#fdfaf1", "#7a1f1f"),
    ("#e9eef2", "#14324a"),
    ("#f6e7b4", "#2b2b2b"),
    ("#ffffff", "#0e4d64"),
)


def _shop(
    rng: random.Random, size: tuple[int, int], k: float, lines: list[str] | None, px: int, face: str = ""
) -> tuple[Image.Image, Rect | None]:
    """One shop's facade, ``size``: upper windows, a fascia board with ``lines`` (None: a plain mark),
    perhaps an awning, a shop window with goods, a glass door; all of it pale but the lettering."""
    w, h = size
    wall = rng.choice(("#e9dcc2", "#ecc6b0", "#e0d8ca", "#f1eadb", "#d6ded9", "#e8d0a8", "#dedad2"))
    img = Image.new("RGBA", size, (*rgb(wall), 255))
    d = ImageDraw.Draw(img)
    f = font(px, face or rng.choice(("bold", "serif")))
    th = measure_lines(lines, f)[1] if lines else round(px * 1.2)
    pad = round(px * 0.8)
    fascia_h = th + 2 * pad
    fascia_y = h * 0.5 - fascia_h
    _windows(d, rng, (8 * k, 0, w - 8 * k, fascia_y - 14 * k), k, [])
    board, ink = rng.choice(FASCIAS)
    pil = round(12 * k)
    d.rectangle((0, fascia_y - 6 * k, w, fascia_y + fascia_h + 6 * k), fill=shaded(wall, 0.92))
    d.rectangle((pil, fascia_y, w - pil, fascia_y + fascia_h), fill=board)
    if lines:
        rect: Rect | None = draw_text(d, pil, fascia_y + pad, lines, f, ink, align="center", width=w - 2 * pil)
    else:
        rect = None
        d.ellipse((w / 2 - th / 2, fascia_y + pad, w / 2 + th / 2, fascia_y + pad + th), fill=shaded(ink, 3.0))
    y = fascia_y + fascia_h + 6 * k
    d.rectangle((0, y, w, h), fill=shaded(wall, 0.94))
    trim = rng.choice(("#b7cad6", "#b5cfbd", "#dcbcbc", "#f0efe8", "#bcc8de"))
    d.rectangle((pil, y, w - pil, h), fill=trim)
    door_w = (w - 2 * pil) * 0.24
    door_left = rng.random() < 0.5
    dx0 = pil + 8 * k if door_left else w - pil - 8 * k - door_w
    gx0, gx1 = (dx0 + door_w + 10 * k, w - pil - 8 * k) if door_left else (pil + 8 * k, dx0 - 10 * k)
    glass_top, base = y + 10 * k, h - 34 * k
    img.paste(
        vertical_gradient((max(1, round(gx1 - gx0)), max(1, round(base - glass_top))), "#bccbd6", "#e6ecf0"),
        (round(gx0), round(glass_top)),
    )
    for _ in range(rng.randrange(3, 6)):  # goods in the window
        gw, gh = rng.uniform(20, 50) * k, rng.uniform(20, 60) * k
        x = rng.uniform(gx0 + 4, max(gx0 + 4, gx1 - gw - 4))
        fill = rng.choice(("#f0d08a", "#e8a8a0", "#b5d6a5", "#ecd9b8", "#d6c2b0", "#ffffff"))
        if rng.random() < 0.5:
            d.rectangle((x, base - gh, x + gw, base), fill=fill)
        else:
            d.ellipse((x, base - gh, x + gw, base + gh * 0.2), fill=fill)
    d.rectangle((gx0 - 2, base - 6 * k, gx1 + 2, base), fill=shaded(trim, 1.2))
    d.polygon(
        [
            (gx0 + (gx1 - gx0) * 0.55, glass_top),
            (gx0 + (gx1 - gx0) * 0.75, glass_top),
            (gx0 + (gx1 - gx0) * 0.45, base),
            (gx0 + (gx1 - gx0) * 0.25, base),
        ],
        fill=(255, 255, 255, 40),
    )
    d.rectangle((dx0, glass_top, dx0 + door_w, h), fill=shaded(trim, 0.95))
    d.rectangle((dx0 + 8 * k, glass_top + 8 * k, dx0 + door_w - 8 * k, h - 40 * k), fill="#c9d6e0")
    hx = dx0 + (door_w - 16 * k if door_left else 16 * k)
    d.rectangle((hx - 2 * k, (glass_top + h) / 2 - 14 * k, hx + 2 * k, (glass_top + h) / 2 + 14 * k), fill="#e6e6e0")
    if rng.random() < 0.5:  # an awning over the window, pale stripes
        stripe = rng.choice(("#e8a8a0", "#a8d8c0", "#a8c0e8", "#d0d0d0"))
        ay0, ay1 = y + 2 * k, y + 2 * k + rng.uniform(34, 46) * k
        n = max(4, round((gx1 - gx0) / (18 * k)))
        sw = (gx1 - gx0 + 12 * k) / n
        for i in range(n):
            x = gx0 - 6 * k + i * sw
            d.rectangle((x, ay0, x + sw, ay1), fill=stripe if i % 2 == 0 else "#f4f1ea")
            d.pieslice((x, ay1 - sw / 2, x + sw, ay1 + sw / 2), 0, 180, fill=stripe if i % 2 == 0 else "#f4f1ea")
    return img, rect


def shop_front(rng: random.Random, lines: list[str], small: bool) -> tuple[Image.Image, Rect, float]:
    """A shop front with the lines on its fascia board, seen from across the road (the dark mass);
    small: the shop in a row of three, further away."""
    k = 0.42 if small else 1.0
    scene = sky_gradient((W, H), rng)
    d = ImageDraw.Draw(scene)
    ground = H * (0.86 if not small else 0.7)
    if not small:
        px = fit_size(lines, "serif", rng.randrange(22, 28), W * 0.78)
        facade, rect = _shop(
            rng, (round(W * rng.uniform(1.0, 1.08)), round(ground * rng.uniform(0.88, 1.0))), k, lines, px
        )
    else:
        px = SMALL
        sw = round(W * 0.34)
        shops = [
            _shop(rng, (sw, round(H * 0.62)), k, lines if i == 1 else None, px, "bold")  # small serifs: misread
            for i in range(3)
        ]
        facade = Image.new("RGBA", (3 * sw, shops[0][0].height), (0, 0, 0, 0))
        for i, (shop, _) in enumerate(shops):
            facade.paste(shop, (i * sw, 0))
        r1 = shops[1][1]
        assert r1 is not None
        rect = (r1[0] + sw, r1[1], r1[2] + sw, r1[3])
    assert rect is not None
    fw, fh = facade.size
    cx = W / 2 + rng.uniform(-25, 25)
    d.rectangle((0, ground - 4, W, H), fill="#dcd7cd")  # pavement, then the road
    road = ground + (H - ground) * 0.4
    d.rectangle((0, road, W, H), fill=rng.choice(("#4a4d52", "#3f4247", "#54565a")))
    angle, _ = tilt_for(rng, small, 1.0, 0.0)
    taper = 0.0 if small else rng.uniform(0.03, 0.07) * rng.choice((-1, 1))
    quad = quad_of(fw, fh, cx, ground - fh / 2 + 6, angle, taper)
    m = warp_onto(scene, facade, quad)
    d = ImageDraw.Draw(scene)
    for _ in range(rng.randrange(0, 3)):  # planters on the pavement
        x = rng.uniform(30, W - 30)
        d.rectangle((x - 18 * k, ground - 6 * k, x + 18 * k, ground + 16 * k), fill="#d2b49a")
        for _ in range(5):
            r = rng.uniform(10, 16) * k
            ox, oy = x + rng.uniform(-14, 14) * k, ground - 8 * k + rng.uniform(-10, 4) * k
            d.ellipse((ox - r, oy - r, ox + r, oy + r), fill=rng.choice(("#a8cf98", "#b8d8a8", "#98c088")))
    return scene, map_rect(m, rect), px


def classroom(rng: random.Random, lines: list[str], small: bool) -> tuple[Image.Image, Rect, float]:
    """A classroom: the lines in marker on a whiteboard, a clock, a poster, rows of desks, and the
    backs of the nearest chairs (the dark mass); small: seen from the back of the room."""
    k = 0.5 if small else 1.0
    px = SMALL if small else fit_size(lines, "bold", rng.randrange(19, 25), W * 0.6)
    f = font(px, "bold")
    tw, th = measure_lines(lines, f)
    pad = round(px * 1.2)
    wall = rng.choice(("#ece7d8", "#dfe8e2", "#e7e2ee", "#f2e9d3", "#dde3ea"))
    scene = vertical_gradient((W, H), shaded(wall, 1.05), shaded(wall, 0.95))
    d = ImageDraw.Draw(scene)
    floor = H * (0.68 if not small else 0.6)
    d.rectangle((0, floor, W, H), fill=rng.choice(("#e3d6c0", "#dcdcd6", "#e6d8c0")))
    bw = max(tw + 2 * pad + round(px * 4), round(W * (0.62 if not small else 0.4)))
    bh = max(th + 2 * pad, round(H * (0.34 if not small else 0.22)))
    board, bd = paper_sheet((bw, bh), "#d3d7db")  # a pale aluminium frame: a dark one would swallow the writing
    fr = max(2, round(6 * k))
    bd.rectangle((fr, fr, bw - 1 - fr, bh - 1 - fr), fill=rng.choice(("#fbfbf9", "#f6f7f4", "#f9f9fb")))
    ink = rng.choice(("#1a3f8f", "#1b1b1b", "#8f1a1a", "#1a5f2f"))
    rect = draw_text(bd, pad + rng.uniform(0, 2) * px, pad, lines, f, ink)
    bd.rectangle((0, bh - fr * 2, bw, bh), fill="#c4c9ce")  # the tray and its markers
    for i in range(rng.randrange(2, 4)):
        mx = bw * 0.65 + i * 16 * k
        bd.rounded_rectangle(
            (mx, bh - fr * 2 - 5 * k, mx + 12 * k, bh - fr * 2),
            radius=1,
            fill=rng.choice(("#8fa8d8", "#d89090", "#90c8a0", "#b0b0b0")),
        )
    cx = W / 2 + rng.uniform(-1, 1) * max(0.0, (W - bw) / 2 - 20)
    cy = max(floor - bh / 2 - H * 0.1, bh / 2 + 10)
    side = -1 if cx > W / 2 else 1  # a clock and a poster where the board is not
    spare = (W - bw) / 2 + (cx - W / 2) * -side
    ox = cx + side * (bw / 2 + spare / 2)
    if spare > 60 * k:
        r, oy = 20 * k, cy - bh / 2 + 10 * k
        d.ellipse((ox - r, oy - r, ox + r, oy + r), fill="#fafafa", outline="#c0c0c0", width=max(1, round(3 * k)))
        d.line((ox, oy, ox + r * 0.5, oy - r * 0.5), fill="#b0b0b0", width=max(1, round(2 * k)))
        d.line((ox, oy, ox, oy + r * 0.7), fill="#b0b0b0", width=max(1, round(2 * k)))
        py0 = oy + 40 * k
        d.rectangle((ox - 35 * k, py0, ox + 35 * k, py0 + 90 * k), fill=rng.choice(("#f6e39e", "#b8e0dc", "#f4c8a0")))
        d.ellipse((ox - 20 * k, py0 + 15 * k, ox + 20 * k, py0 + 55 * k), fill=rng.choice(("#a8c0e0", "#f0b0a0")))
    if small:  # a window on the side wall
        wx = 20 if cx > W / 2 else W - 120
        d.rectangle((wx, H * 0.12, wx + 100, floor - 60), fill="#f2f6f8", outline="#d0d6db", width=3)
        d.line((wx + 50, H * 0.12, wx + 50, floor - 60), fill="#d0d6db", width=3)
    m = warp_onto(scene, board, quad_of(bw, bh, cx, cy, *tilt_for(rng, small, 1.5, 0.05)), 2 * k)
    d = ImageDraw.Draw(scene)
    desk = rng.choice(("#e6d2b0", "#e2cca6", "#ecdcc0"))
    chair = rng.choice(("#b8c8d8", "#cccccc", "#dcb8b0", "#b8d8c0"))
    rows = 2 if not small else 3
    for row in range(rows):  # rows of desks, nearer ones larger and lower
        scale = (0.55 + 0.6 * (row + 1) / rows) * (1 if not small else 0.7)
        y = floor + (H - floor) * (0.15 + 0.55 * (row + 1) / rows) - 20 * scale
        dw, dh = 150 * scale, 34 * scale
        x = -rng.uniform(0, dw) + 10
        while x < W:
            d.rectangle((x + dw * 0.1, y - 42 * scale, x + dw * 0.9, y - 4 * scale), fill=chair)
            d.polygon([(x, y), (x + dw, y), (x + dw * 1.04, y + dh), (x - dw * 0.04, y + dh)], fill=desk)
            d.rectangle((x - dw * 0.04, y + dh, x + dw * 1.04, y + dh + 5 * scale), fill=shaded(desk, 0.92))
            x += dw * 1.25
    backs = H - H * rng.uniform(0.1, 0.13)  # the backs of the nearest chairs, one dark mass along the bottom
    shade = rng.choice(("#2f3a4a", "#3a3a3a", "#4a2f2a", "#2f4a3a"))
    d.rectangle((0, backs + 20, W, H), fill=shade)
    x = -rng.uniform(0, 80)
    while x < W:
        d.rounded_rectangle((x, backs, x + 150, H), radius=18, fill=shade)
        x += 140
    return scene, map_rect(m, rect), px
