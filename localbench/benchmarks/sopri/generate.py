"""New SopriBench users: profile → leakage plan → post scripts → images rendered from the plan.

``generate_users(n, seed, out)`` writes ``out/users/<id>/user.yaml`` with the user's PNGs beside it,
and ``out/sandbox/`` (``gazetteer.csv``, ``documents.jsonl``: the fixed fictional world of
``world.py``). User ``i`` depends only on ``(seed, i)`` and on the sentences of users before it (no
caption sentence is shared between users, ``captions``), so ``n`` users are a prefix of ``n + k``,
and the same seed gives the same files byte for byte (on one Pillow and PyYAML version). The shipped
suite scenarios/sopri-mini/ is exactly ``generate_users(SUITE_N, SUITE_SEED, ...)``; a test
regenerates it and fails if the committed files are stale.

Every leak records its cues, each pinned to a post (a caption span, a tag, the image text and its
region, a metadata value, the timestamp, the IP region), and a one-line inference chain, so that
``localbench data check`` can verify each label mechanically.

Captions come from templates. With ``model=PRESET`` a local model rewrites each post's caption under
a JSON-schema grammar (prompts/gen_caption.j2); a rewrite that drops a planted cue phrase is refused
and the template caption kept, and ``User.generator["captions"]`` records which post got which.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as _dt
import hashlib
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field

from localbench.benchmarks.sopri import images as img
from localbench.benchmarks.sopri.captions import SentenceLedger, variants
from localbench.benchmarks.sopri.sensitivity import sensitivity_of
from localbench.benchmarks.sopri import suite_release
from localbench.benchmarks.sopri.scenario import (
    Attribute,
    Leak,
    LeakCue,
    Post,
    PostImage,
    User,
)
from localbench.benchmarks.sopri.suite_plan import (
    YEAR,
    Cue,
    Recipe,
    draw_profile,
    plan_leaks,
)
from localbench.benchmarks.sopri.taxonomy import BUILTIN_SUITES, TAXONOMY_NAMES, taxonomy
from localbench.benchmarks.sopri.world import documents_jsonl, gazetteer_csv, world
from localbench.scenario_files import ScenarioError

GENERATOR = "localbench.sopri.generate"
GENERATOR_VERSION = "4"  # 2: contextual sensitivity from the declared table (sensitivity.py), no random noise;
# 3: cue annotations (Leak.cues, Leak.chain), photo-like images, no caption sentence shared between users;
# 4: nine hierarchical attributes (age, birthday, occupation, travel and health gained paths)
SUITE_N, SUITE_SEED = 12, 2026  # the shipped suites scenarios/sopri-mini/ (localbench's taxonomy), sopri-release/
N_POSTS = 10
CUE_POSTS = 8  # posts that may carry cues; the rest are distractors
MIN_LEAKS = 8
PROMPTS = Path(__file__).parent / "prompts"
TITLES = ("", "", "", "Little things", "Today", "Note to self", "Mood", "Weekly dump")
DISTRACTORS = (  # posts that carry no cue; each template has wordings enough that no two users share a sentence
    "[Sunset|Pink sky|Golden light] over the [rooftops|river|car park|harbour cranes] [tonight|this evening].",
    "Anyone else watching the new season of [that baking show|the detective series|the space drama]? "
    "[No spoilers|Not a word about the ending|Spoilers and we are done]!",
    "[Rainy|Grey|Windy] [Sunday|Saturday|afternoon], [tea|cocoa|coffee] and a long [book|crossword].",
    "This [song|album|podcast episode] has been on repeat [all week|since Monday|for days].",
    "Tried a new [recipe|curry|soup], [half of it survived|the smoke alarm approved|it was edible].",
    "The clouds looked like a [whale|dragon|teapot|sleeping cat] [today|this morning].",
    "[Monday|Tuesday|Wednesday|Thursday] again[, how|, already|, send help|, somehow|, of course].",
    "Found this old [photo|ticket stub|drawing] [on my phone|in a drawer|in a book] [today|this week].",
    "Reorganised my [bookshelf|wardrobe|spice rack] by [colour|height|mood].",
    "[Thunderstorm|Power cut|Hailstorm] outside, candles inside[.|, very cosy.]",
    "[Plants|Tomatoes|Herbs] on the windowsill are [thriving|finally sprouting|doing their best].",
    "Lost [an hour|a whole evening|my Saturday] to a [jigsaw|video game|documentary] again.",
)
DEVICES = ("Pixel 8", "iPhone 14", "Galaxy A54", "Fairphone 5")


@dataclass
class Slot:
    """One post being scripted: the cues placed in it, in order."""

    cues: list[tuple[Recipe, Cue]] = field(default_factory=list)

    def images(self) -> int:
        return sum(c.image is not None for _, c in self.cues)

    def texts(self) -> int:
        return sum(bool(c.caption) for _, c in self.cues)

    def pinned(self) -> bool:
        return any(c.when for _, c in self.cues)


def _fmt(template: str, v: dict[str, str]) -> str:
    return template.format(**v)


def _place(rng: random.Random, recipes: list[Recipe]) -> list[Slot] | None:
    """Cues into CUE_POSTS posts (cues of one leak in different posts; ≤ 1 image, ≤ 2 captions and
    ≤ 1 pinned time per post); None if they do not fit."""
    posts = [Slot() for _ in range(CUE_POSTS)]
    cues = [(r, c) for r in recipes for c in r.cues]
    cues.sort(key=lambda rc: (rc[1].image is None, not rc[1].when))  # the most constrained first
    for r, c in cues:
        ok = [i for i, p in enumerate(posts)
              if all(pr is not r for pr, _ in p.cues)
              and not (c.image and p.images()) and not (c.caption and p.texts() >= 2) and not (c.when and p.pinned())]
        if not ok:
            return None
        least = min(len(posts[i].cues) for i in ok)
        posts[rng.choice([i for i in ok if len(posts[i].cues) == least])].cues.append((r, c))
    return posts


def _timestamp(rng: random.Random, when: str, v: dict[str, str]) -> _dt.datetime:
    day = _dt.date(YEAR, 1, 1) + _dt.timedelta(days=rng.randrange(0, 330))
    hh, mm = rng.randint(8, 22), rng.randrange(0, 60)
    if when:
        kind, _, rest = _fmt(when, v).partition(" ")
        if kind == "weekday":
            while day.weekday() >= 5:
                day += _dt.timedelta(days=1)
            hh, mm = (int(x) for x in rest.split(":"))
            mm = min(59, mm + rng.randint(0, 4))
        else:  # date MM-DD HH:MM
            md, hm = rest.split(" ")
            day = _dt.date(YEAR, int(md[:2]), int(md[3:]))
            hh, mm = (int(x) for x in hm.split(":"))
    return _dt.datetime(day.year, day.month, day.day, hh, mm)


@dataclass
class Draft:
    """One user before writing: the model, their images (file -> PNG bytes), each post's template
    caption and the phrases a rewritten caption must keep."""

    user: User
    pngs: dict[str, bytes]
    keep: dict[str, list[str]]


def _draft(i: int, seed: int, ledger: SentenceLedger, taxonomy_name: str = "localbench") -> Draft:
    rng = random.Random(f"sopri:{seed}:{i}")
    w = world()
    v, truth = draw_profile(rng, w)
    labels: dict[str, tuple[str, list[str] | None]] = dict(truth)
    if taxonomy_name == "release":  # the same user, labelled with the release's slots and ladders
        labels = dict(suite_release.release_profile(rng, w, v, truth))
        plan = plan_leaks(rng, v, rng.randint(9, 12), suite_release.RECIPES, suite_release.FIRST_SLOT)
    else:
        plan = plan_leaks(rng, v, rng.randint(9, 12))
    tries = 0
    while (slots := _place(rng, plan.recipes)) is None:  # another placement; every tenth try drops the last leak
        tries += 1
        if tries % 10 == 0 and len(plan.recipes) > MIN_LEAKS:
            plan.recipes.pop()
        if tries > 500:
            raise RuntimeError(f"user {i} (seed {seed}): {len(plan.recipes)} leaks do not fit {CUE_POSTS} posts")
    home = next(p for p in w.places if p.name == truth["home"][0])
    ip = f"{home.country} · {home.province}"
    uid = f"u{i + 1:02d}"

    def say(template: str) -> str:  # a wording of the template no earlier user of the suite has posted
        return ledger.pick(rng, variants(_fmt(template, v)), uid)

    drafts: list[dict[str, Any]] = []
    for k in range(N_POSTS):
        cues = slots[k].cues if k < CUE_POSTS else []
        when = next((c.when for _, c in cues if c.when), "")
        said = {id(c): say(c.caption) for _, c in cues if c.caption}
        texts = list(said.values())
        if not texts:
            filler = next((c.filler for _, c in cues if c.filler), "")
            texts = [say(filler or rng.choice(DISTRACTORS))]
        image = next((c for _, c in cues if c.image), None)
        photo = image is None and not cues and rng.random() < 0.5
        tags = [_fmt(t, v) for _, c in cues for t in c.tags]
        meta = {"likes": str(rng.randint(3, 480)), "device": rng.choice(DEVICES)}
        meta.update({key: _fmt(val, v) for _, c in cues for key, val in c.metadata})
        keep = [x for _, c in cues if c.caption for x in _phrases(said[id(c)], c.caption, v)]
        drafts.append({"ts": _timestamp(rng, when, v), "caption": " ".join(texts), "tags": tags, "image": image,
                       "photo": photo, "meta": meta, "title": rng.choice(TITLES), "cues": cues, "said": said,
                       "keep": keep, "photo_seed": rng.randrange(1 << 30)})
    order = sorted(range(N_POSTS), key=lambda k: drafts[k]["ts"])
    pid = {k: f"p{n + 1:02d}" for n, k in enumerate(order)}
    posts: list[Post] = []
    pngs: dict[str, bytes] = {}
    where: dict[int, list[tuple[str, list[str]]]] = {}  # recipe id -> [(post id, carriers)]
    found: dict[int, list[LeakCue]] = {}  # recipe id -> its cues, pinned
    for k in order:
        d = drafts[k]
        images, box = [], None
        file = f"{pid[k]}-1.png"
        if d["image"] is not None:
            kind, lines = d["image"].image
            lines = [part for x in lines for part in img.wrap(_fmt(x, v))]  # drawn exactly as recorded
            shot = img.render_scene(kind, lines, seed=d["photo_seed"], small=d["image"].small)
            pngs[file], box = shot.png, shot.box
            images.append(PostImage(file=file, kind=kind, alt=img.ALT[kind], text="\n".join(lines)))
        elif d["photo"]:
            pngs[file] = img.render_scene("photo", [], seed=d["photo_seed"]).png
            images.append(PostImage(file=file, kind="photo", alt=img.ALT["photo"]))
        post = Post(id=pid[k], title=d["title"], caption=d["caption"], tags=d["tags"],
                    timestamp=d["ts"].isoformat(timespec="minutes"), ip_region=ip, images=images, metadata=d["meta"])
        posts.append(post)
        for r, c in d["cues"]:
            carriers = [*(["caption"] if c.caption else []), *(["tags"] if c.tags else []),
                        *([f"image:{images[0].file}"] if c.image else []), *(["timestamp"] if c.when else []),
                        *(["metadata"] if c.metadata else []), *c.extra]
            where.setdefault(id(r), []).append((pid[k], carriers))
            found.setdefault(id(r), []).extend(_pinned(post, c, d["said"].get(id(c), ""), v, box))
    chosen = {r.slot: r for r in plan.recipes}
    profile = []
    for slot in taxonomy(taxonomy_name).slots:
        value, path = labels[slot.name]
        s = slot.sensitivity or sensitivity_of(slot.name, value, {k: val for k, (val, _) in truth.items()})
        leak = None
        if slot.name in chosen:
            r = chosen[slot.name]
            cited = sorted(where[id(r)])
            leak = Leak(type=r.type, difficulty=r.difficulty, posts=[p for p, _ in cited],
                        carriers=list(dict.fromkeys(c for _, cs in cited for c in cs)), depth=r.depth,
                        cues=sorted(found[id(r)], key=lambda c: c.post), chain=_fmt(r.chain, v))
        profile.append(Attribute(slot=slot.name, value=value, path=path, sensitivity=s, leak=leak))
    user = User(id=uid, nickname=f"{v['first'].lower()}_{rng.choice(('daily', 'writes', 'outdoors', 'at_home', 'snaps'))}",
                bio=rng.choice(("Coffee first.", "Collecting small joys.", "Opinions are my own.", "Here for the memes.")),
                ip_region=ip, posts=posts, profile=profile, taxonomy=taxonomy_name,
                generator={"name": GENERATOR, "version": GENERATOR_VERSION, "seed": str(seed), "index": str(i),
                           "captions": "template",
                           **({"taxonomy": taxonomy_name} if taxonomy_name != "localbench" else {})})
    return Draft(user, pngs, {pid[k]: drafts[k]["keep"] for k in order})


def _phrases(said: str, template: str, v: dict[str, str]) -> list[str]:
    """What a rewritten caption must keep of a cue: the profile values it names (a value that is a
    whole sentence is kept whole: the wording ``said``), else the whole cue sentence."""
    import string

    names = [f for _, f, _, _ in string.Formatter().parse(template) if f]
    values = [v[n] for n in names if v[n]]
    return [x for x in values if x in said and "[" not in x] or [said]


def _pinned(post: Post, c: Cue, said: str, v: dict[str, str], box: list[float] | None) -> list[LeakCue]:
    """Where cue ``c`` sits in ``post``, as the data check verifies it: the caption span, each tag, the
    image text and its region, each metadata value, the pinned timestamp, the IP region."""
    out = [LeakCue(post=post.id, at="caption", text=said)] if c.caption else []
    out += [LeakCue(post=post.id, at="tags", text=_fmt(t, v)) for t in c.tags]
    if c.image:
        image = post.images[0]
        out.append(LeakCue(post=post.id, at="image", text=image.text, file=image.file, box=box))
    out += [LeakCue(post=post.id, at="metadata", field=key, text=_fmt(val, v)) for key, val in c.metadata]
    if c.when:
        out.append(LeakCue(post=post.id, at="timestamp", text=post.timestamp))
    if "ip_region" in c.extra:
        out.append(LeakCue(post=post.id, at="ip_region", text=post.ip_region))
    return out


# -- model-written captions ------------------------------------------------------------------------

class Caption(BaseModel):
    """A caption rewritten by the generator model."""

    model_config = ConfigDict(extra="forbid")
    caption: str = Field(max_length=280)


def _prompt_hash() -> str:
    h = hashlib.sha256()
    for f in sorted(PROMPTS.glob("gen_*.j2")):
        h.update(f.name.encode() + b"\0" + f.read_bytes())
    return h.hexdigest()[:16]


async def _rewrite(drafts: list[Draft], model: str, seed: int) -> None:
    from localbench.runtime.prompts import PromptSet
    from localbench.serving.output import OutputSpec
    from localbench.serving.seeds import derive_seed
    from localbench.serving.session import open_client
    from localbench.serving.types import GenerationRequest
    from localbench.spec import EngineOptions

    prompts = PromptSet(PROMPTS)
    client = open_client(model, EngineOptions(), None, None, role="generator")
    out = OutputSpec.from_model(Caption)
    try:
        jobs = [(d, p) for d in drafts for p in d.user.posts]
        reqs = [GenerationRequest(
            messages=[{"role": "system", "content": prompts.render("gen_caption_system.j2")},
                      {"role": "user", "content": prompts.render("gen_caption.j2", nickname=d.user.nickname,
                                                                 caption=p.caption, keep=d.keep[p.id], tags=p.tags)}],
            output=out, role="generator", max_tokens=160, temperature=0.7,
            seed=derive_seed(seed, d.user.id, p.id, "caption"), tag=f"{d.user.id}/{p.id}") for d, p in jobs]
        results = await client.generate_many(reqs)
    finally:
        await client.aclose()
    by_user: dict[str, list[str]] = {}
    for (d, p), res in zip(jobs, results):
        text = res.parsed.caption.strip() if res.failure is None and res.parsed is not None else ""
        kept = bool(text) and all(k.lower() in text.lower() for k in d.keep[p.id])
        if kept:
            p.caption = text
            for c in (c for a in d.user.leaked for c in a.leak.cues if c.post == p.id and c.at == "caption"):
                c.text = text  # the cue's span is now the rewritten caption
        why = "model" if kept else ("template (reply failed)" if res.failure else "template (cue dropped)")
        by_user.setdefault(d.user.id, []).append(f"{p.id}={why}")
    for d in drafts:
        d.user.generator.update({"captions": f"model {model}: " + ", ".join(by_user[d.user.id]),
                                 "prompt_hash": _prompt_hash()})


# -- writing ---------------------------------------------------------------------------------------

class _Dumper(yaml.SafeDumper):
    """Multi-line strings (an image's planted lines) as literal blocks, one planted line a line."""


def _str(dumper: yaml.SafeDumper, s: str) -> yaml.Node:
    return dumper.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s else None)


_Dumper.add_representer(str, _str)


def dump_user(user: User) -> str:
    """A user as YAML text, fields in model order, defaults left out, unicode kept."""
    data = user.model_dump(mode="json", exclude_defaults=True)
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100)


def _write(path: Path, data: bytes, overwrite: bool) -> Path:
    if path.exists() and path.read_bytes() != data and not overwrite:
        raise ScenarioError(str(path), None, "exists with other content (pass overwrite=True, or --overwrite, to "
                                             "replace it)")
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)
    return path


def files_of(drafts: list[Draft]) -> dict[str, bytes]:
    """Every file the generator writes, by path relative to the suite folder."""
    w = world()
    files = {"sandbox/gazetteer.csv": gazetteer_csv(w).encode(), "sandbox/documents.jsonl": documents_jsonl(w).encode()}
    for d in drafts:
        files[f"users/{d.user.id}/user.yaml"] = dump_user(d.user).encode()
        for name, png in d.pngs.items():
            files[f"users/{d.user.id}/{name}"] = png
    return files


def generate_users(n: int, seed: int, out: str | Path, overwrite: bool = False, model: str | None = None,
                   taxonomy_name: str = "localbench") -> list[Path]:
    """Write ``n`` users (and the sandbox) into ``out``, labelled under ``taxonomy_name`` (the same
    users under either: the release's labels add facts, ``suite_release``); returns the user.yaml paths.

    A file that exists with other content is an error unless ``overwrite`` (checked for every file
    before any is written, so a refused run changes nothing)."""
    if n < 1:
        raise ScenarioError("n", None, f"must be at least 1, got {n}")
    ledger = SentenceLedger()
    taxonomy(taxonomy_name)  # a ValueError naming both for another name
    drafts = [_draft(i, seed, ledger, taxonomy_name) for i in range(n)]
    if model:
        asyncio.run(_rewrite(drafts, model, seed))
    out = Path(out)
    files = files_of(drafts)
    if not overwrite:
        for rel, data in files.items():
            p = out / rel
            if p.exists() and p.read_bytes() != data:
                raise ScenarioError(str(p), None, "exists with other content (pass overwrite=True, or --overwrite, "
                                                  "to replace it)")
    for rel, data in files.items():
        _write(out / rel, data, overwrite)
    return [out / f"users/{d.user.id}/user.yaml" for d in drafts]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=SUITE_N)
    ap.add_argument("--seed", type=int, default=SUITE_SEED)
    ap.add_argument("--out", required=True)
    ap.add_argument("--model", default=None, help="a preset that rewrites the captions")
    ap.add_argument("--overwrite", action="store_true")
    ap.add_argument("--taxonomy", choices=TAXONOMY_NAMES, default="localbench",
                    help="whose 28 slots label the users (shipped: "
                         + ", ".join(f"{k} in scenarios/{v}" for k, v in BUILTIN_SUITES.items()) + ")")
    a = ap.parse_args(argv)
    paths = generate_users(a.n, a.seed, a.out, overwrite=a.overwrite, model=a.model, taxonomy_name=a.taxonomy)
    print(f"{len(paths)} users written to {a.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
