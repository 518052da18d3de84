"""A SopriBench source written out in the released code's input format, ``argus-user-json-v1``.

``localbench data export argus SOURCE --out DIR`` calls ``export_source``: so the release's own code (its JSON loader
reads one file or a folder of ``*.json``) can read localbench's suite, and localbench can read the
export back (``argus_input``) and get the same users. The folder it writes:

- ``<user_id>.json``: ``schema_version``, ``user_id``, ``platform: localbench``, ``metadata``
  {``nickname``, ``bio``, ``ip_location``}, ``posts`` ({``post_id``, ``title``, ``caption``, ``tags``,
  ``timestamp``, ``ip_location``, ``media_files``, ``metadata``}); each media entry
  ``{"path": "<user_id>/<file>", "type": "image", "alt": ...}``, a path relative to the JSON file;
- ``<user_id>/``: the user's images, copied;
- ``<user_id>.labels.yaml``: the hidden profile in the suite's format (its image cues and carriers
  naming images by their path in the export), the cohort, the taxonomy, the generator and each
  image's kind and planted text (annotations, so no attacker reads them from the JSON);
- ``manifest.json``: the schema, the source and the users (the release's loader skips this name);
- ``sandbox/``: the suite's sandbox files, which a run on the export uses for its tools.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from localbench.benchmarks.sopri.argus_input import LABELS_SUFFIX, MANIFEST, SCHEMA
from localbench.benchmarks.sopri.scenario import User
from localbench.errors import UserError


def user_json(user: User) -> dict[str, Any]:
    """One user as an argus-user-json-v1 object (media paths relative to the JSON file)."""
    return {
        "schema_version": SCHEMA,
        "user_id": user.id,
        "platform": "localbench",
        "metadata": {"nickname": user.nickname, "bio": user.bio, "ip_location": user.ip_region},
        "posts": [{
            "post_id": p.id,
            "title": p.title,
            "caption": p.caption,
            "tags": list(p.tags),
            "timestamp": p.timestamp,
            "ip_location": p.ip_region,
            "media_files": [{"path": f"{user.id}/{im.file}", "type": "image", **({"alt": im.alt} if im.alt else {})}
                            for im in p.images],
            "metadata": dict(p.metadata),
        } for p in user.posts],
    }


def user_labels(user: User) -> dict[str, Any]:
    """The labels file beside the JSON: what an attacker must not see."""
    images = {f"{user.id}/{im.file}": {"kind": im.kind, "text": im.text} for p in user.posts for im in p.images}
    out: dict[str, Any] = {"user_id": user.id, "cohort": user.cohort}
    if "taxonomy" in User.model_fields:  # whose slots the profile names
        out["taxonomy"] = user.taxonomy
    if user.generator:
        out["generator"] = dict(user.generator)
    out["images"] = images
    out["profile"] = [_relabel(a.model_dump(exclude_none=True, exclude_defaults=True), user.id) for a in user.profile]
    return out


def _relabel(attribute: dict[str, Any], user_id: str) -> dict[str, Any]:
    """An attribute whose leak names images (cue ``file``, carrier ``image:<file>``) by their path in
    the export, relative to the JSON file, as the user's images are named there."""
    leak = attribute.get("leak")
    if not leak:
        return attribute
    leak["carriers"] = [f"image:{user_id}/{c[6:]}" if c.startswith("image:") else c for c in leak.get("carriers", [])]
    for cue in leak.get("cues", []):
        if cue.get("file"):
            cue["file"] = f"{user_id}/{cue['file']}"
    return attribute


def _write(path: Path, text: str | bytes, overwrite: bool) -> None:
    old = path.read_bytes() if path.is_file() else None
    new = text.encode() if isinstance(text, str) else text
    if old is not None and old != new and not overwrite:
        raise UserError(f"{path}: exists and differs (pass --overwrite to replace it)")
    if old != new:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(new)


def export_argus(users: list[User], out: Path, *, source: str, sandbox: Path | None = None,
                 overwrite: bool = False) -> list[Path]:
    """Write ``users`` into ``out`` (layout above); the JSON files written, in user order."""
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for user in users:
        for p in user.posts:
            for im in p.images:
                _write(out / user.id / im.file, user.image_path(im).read_bytes(), overwrite)
        target = out / f"{user.id}.json"
        _write(target, json.dumps(user_json(user), ensure_ascii=False, indent=2) + "\n", overwrite)
        labels = yaml.safe_dump(user_labels(user), sort_keys=False, allow_unicode=True, width=100)
        _write(out / f"{user.id}{LABELS_SUFFIX}", labels, overwrite)
        written.append(target)
    if sandbox is not None and sandbox.is_dir():
        for f in sorted(sandbox.iterdir()):
            if f.is_file():
                _write(out / "sandbox" / f.name, f.read_bytes(), overwrite)
    manifest = {"schema_version": SCHEMA, "source": source, "written_by": "localbench data export argus",
                "labels": f"<user_id>{LABELS_SUFFIX}", "users": [u.id for u in users]}
    _write(out / MANIFEST, json.dumps(manifest, indent=2) + "\n", overwrite)
    return written


def export_source(source: str, out: Path, overwrite: bool = False) -> list[Path]:
    """Every user of a SopriBench source (``builtin``: the default taxonomy's shipped suite, as for
    ``run`` and ``data check``), with its sandbox, written into ``out``."""
    from localbench.benchmarks.sopri.loaders import load_users, sandbox_dir
    from localbench.benchmarks.sopri.taxonomy import builtin_source

    source = builtin_source(source)
    users = load_users(source).users
    return export_argus(users, out, source=source, sandbox=sandbox_dir(source), overwrite=overwrite)
