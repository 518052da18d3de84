"""SopriBench users from the released code's input format, ``argus-user-json-v1``.

The release (repository sfofgalaxy/AUGUS) reads one JSON object per user: ``user_id``; ``metadata``
{``nickname``, ``bio``, ``ip_location``}; ``posts``, each {``post_id``, ``title``, ``caption``,
``tags``, ``timestamp`` (ISO 8601), ``media_files``, ``metadata``}. This module maps such a file onto
``scenario.User`` so every attacker can run on users localbench did not make (a researcher's own, or
the gated data's). Facts of the format are taken from the release; the code is localbench's.

Read as the release reads, with localbench's confinement on top:

- the aliases ``id`` (user and post), ``media``/``images`` (for ``media_files``), ``created_at``
  (``timestamp``), ``location_ip``/``ip_location`` (the post's IP region), ``text``/``description``
  (``caption``); ``topics`` and ``hashtags`` join ``tags``; ``tagged_users`` goes to the post's metadata;
- a media entry is a string or a mapping (``path``/``file``/``url``/``src``, a ``type``, an ``alt``);
  one whose type is not ``image``/``photo``, or whose extension is a video, audio or document one, is
  skipped (``data check`` counts it);
- a relative path is resolved against the JSON file's folder and must stay inside it; an absolute
  path must lie inside it too (it is then read as relative); a symbolic link, a missing or unreadable
  file is refused (``image_check``);
- an ``http(s)://`` URL is refused: localbench fetches nothing from the network;
- a ``data:`` URL is decoded into a staging folder under the cache (``sopri-argus/``, named by the
  file's content hash), with the user's other images copied beside it, and checked like any image.

Labels (optional): ``<stem>.labels.yaml`` beside ``<stem>.json`` holds the hidden profile in the
suite's format (``profile:``, as in a suite's ``user.yaml``), optionally ``user_id`` (must match),
``cohort``, ``taxonomy`` (whose slots the profile names), ``generator`` and ``images`` (media path as
written → ``{kind, text}``: the annotations a suite image carries, which ``data check`` verifies cues
against). Without it the user is unlabelled:
every attacker runs, and scoring has no PES for it (``scoring``; the report lists the inferred
profiles instead).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePosixPath
from typing import Any

from localbench.scenario_files import ScenarioError, read_structured

SCHEMA = "argus-user-json-v1"
PREFIX = "argus:"
LABELS_SUFFIX = ".labels.yaml"
MANIFEST = "manifest.json"
IMAGE_TYPES = ("image", "photo")
NOT_IMAGE = frozenset({".mp4", ".mov", ".m4v", ".webm", ".avi", ".mkv", ".flv", ".wmv", ".3gp", ".mp3", ".wav",
                       ".m4a", ".aac", ".ogg", ".flac", ".pdf", ".txt", ".json", ".html"})
DATA_URL = re.compile(r"^data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?P<params>(;[^,;]*)*?);base64,(?P<data>.*)$", re.S)
DATA_URL_BYTES = 20 * 1024 * 1024
STAGING = "sopri-argus"
FORMAT_DOC = "docs/sopri.md (Reading the release's input format)"


@dataclass(frozen=True)
class Located:
    """A user record read from an argus file, with the folder its image paths are relative to (the
    JSON file's folder, or the staging folder where data URLs were decoded) and the media skipped."""

    data: dict[str, Any]
    folder: Path
    skipped: tuple[tuple[str, str], ...] = ()  # (field, why) of each media entry not read as an image


# -- what a source is ----------------------------------------------------------------------------

def is_argus_source(source: str | Path) -> bool:
    """``argus:PATH``; or, detected, a ``.json`` file, or a folder with ``*.json`` users (not only a
    manifest) and no localbench suite (``users/<id>/user.yaml``) in it."""
    s = str(source)
    if s.startswith(PREFIX):
        return True
    if s == "builtin" or s.startswith(("builtin:", "hf:")):
        return False
    p = Path(s).expanduser()
    if p.is_file():
        return p.suffix.lower() == ".json"
    if not p.is_dir():
        return False
    return bool(user_files(p, strict=False)) and not any(p.glob("users/*/user.yaml"))


def argus_path(source: str | Path) -> Path:
    return Path(str(source).removeprefix(PREFIX)).expanduser()


def user_files(path: Path, strict: bool = True) -> list[Path]:
    """The user files of an input: the file itself, or every ``*.json`` of the folder but ``manifest.json``
    (not recursive, as the release reads it)."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        if strict:
            raise ScenarioError(str(path), None, f"no such file or folder (an {SCHEMA} source is a .json file or "
                                                 "a folder of them)")
        return []
    files = sorted(p for p in path.glob("*.json") if p.is_file() and p.name != MANIFEST)
    if strict and not files:
        raise ScenarioError(str(path), None, f"no {SCHEMA} user files here (*.json other than {MANIFEST})")
    return files


def labels_file(json_file: Path) -> Path:
    return json_file.with_name(json_file.stem + LABELS_SUFFIX)


# -- reading one file ------------------------------------------------------------------------------

def _text(value: Any, file: str, field: str) -> str:
    if value is None:
        return ""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)
    raise ScenarioError(file, field, f"expected a string, got {type(value).__name__}")


def _first(d: dict[str, Any], *keys: str) -> tuple[str, Any]:
    """The first key of ``keys`` that ``d`` has with a value (not None or empty), and the value."""
    for k in keys:
        if d.get(k) not in (None, "", []):
            return k, d[k]
    return keys[0], None


def _strings(value: Any, file: str, field: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(x, (str, int, float)) and not isinstance(x, bool) for x in value):
        return [str(x) for x in value]
    raise ScenarioError(file, field, "expected a list of strings")


def _meta_value(value: Any) -> str | None:
    """A post metadata value as the suite keeps it (text); None for an empty one."""
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list) and all(isinstance(x, str) for x in value):
        return ", ".join(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _timestamp(value: Any, file: str, field: str) -> str:
    ts = _text(value, file, field).strip()
    if not ts:
        raise ScenarioError(file, field, "missing: every post needs its time (ISO 8601, e.g. 2026-01-10T08:30:00Z)")
    try:
        datetime.fromisoformat(ts.replace("Z", "+00:00") if ts.endswith("Z") else ts)
    except ValueError:
        raise ScenarioError(file, field, f"'{ts}' is not an ISO 8601 time (e.g. 2026-01-10T08:30:00Z)") from None
    return ts


def _media_entry(item: Any, file: str, field: str) -> tuple[str, str | None, str]:
    """(reference, declared type, alt text) of one media entry."""
    if isinstance(item, str):
        return item.strip(), None, ""
    if isinstance(item, dict):
        key, ref = _first(item, "path", "file", "url", "src")
        _, kind = _first(item, "type", "media_type", "kind")
        return (_text(ref, file, f"{field}.{key}").strip(), str(kind).lower() if kind else None,
                _text(item.get("alt"), file, f"{field}.alt"))
    raise ScenarioError(file, field, f"expected a path or a mapping with 'path', got {type(item).__name__}")


def _decode_data_url(ref: str, file: str, field: str) -> tuple[bytes, str]:
    m = DATA_URL.match(ref)
    if not m:
        raise ScenarioError(file, field, "a data URL that is not base64 ('data:image/png;base64,...')")
    mime = (m["mime"] or "").lower()
    if not mime.startswith("image/"):
        raise ScenarioError(file, field, f"a data URL of type '{mime or 'unknown'}', not an image")
    if len(m["data"]) > DATA_URL_BYTES * 4 // 3 + 4:
        raise ScenarioError(file, field, f"a data URL over the {DATA_URL_BYTES}-byte limit for an image")
    try:
        raw = base64.b64decode(m["data"], validate=True)
    except (binascii.Error, ValueError) as e:
        raise ScenarioError(file, field, f"a data URL that does not decode as base64 ({e})") from None
    ext = {"image/jpeg": ".jpg", "image/svg+xml": ".svg"}.get(mime, "." + mime.split("/", 1)[1])
    return raw, ext


def _relative(ref: str, folder: Path, file: str, field: str) -> str:
    """A file reference as a path relative to ``folder`` (posix), refused where it leaves it."""
    p = Path(ref).expanduser()
    if p.is_absolute():
        try:
            rel = p.resolve().relative_to(folder.resolve())
        except ValueError:
            raise ScenarioError(file, field, f"absolute path '{ref}' is outside the input folder {folder}; media "
                                             "must sit inside the folder of the JSON file") from None
        return rel.as_posix()
    parts = PurePosixPath(ref.replace("\\", "/")).parts
    if ".." in parts:
        raise ScenarioError(file, field, f"'{ref}' leaves the input folder {folder} ('..'); media must sit "
                                         "inside the folder of the JSON file")
    return PurePosixPath(*parts).as_posix()


class _Media:
    """The images of one user file: relative files as they are, data URLs decoded (in memory until the
    user is known to need a staging folder)."""

    def __init__(self, file: str, folder: Path):
        self.file, self.folder = file, folder
        self.decoded: dict[str, bytes] = {}  # staged name -> bytes
        self.skipped: list[tuple[str, str]] = []

    def image(self, item: Any, field: str) -> dict[str, Any] | None:
        ref, kind, alt = _media_entry(item, self.file, field)
        if not ref:
            self.skipped.append((field, "empty media entry"))
            return None
        if kind and kind not in IMAGE_TYPES:
            self.skipped.append((field, f"media of type '{kind}', not an image"))
            return None
        low = ref.lower()
        if low.startswith(("http://", "https://")):
            raise ScenarioError(self.file, field, f"'{ref}' is a URL: localbench fetches no media from the network; "
                                                  "download it beside the JSON file and give its relative path")
        if low.startswith("data:"):
            raw, ext = _decode_data_url(ref, self.file, field)
            name = f"data-{hashlib.sha256(raw).hexdigest()[:16]}{ext}"
            self.decoded[name] = raw
            return {"file": name, "alt": alt}
        if "://" in ref:
            raise ScenarioError(self.file, field, f"'{ref}': only paths and data URLs are read (no network)")
        if PurePosixPath(low).suffix in NOT_IMAGE:
            self.skipped.append((field, f"'{ref}' is not an image"))
            return None
        return {"file": _relative(ref, self.folder, self.file, field), "alt": alt}


def _post(raw: Any, i: int, media: _Media, file: str) -> dict[str, Any]:
    at = f"posts[{i}]"
    if not isinstance(raw, dict):
        raise ScenarioError(file, at, "expected a mapping of post fields")
    id_key, pid = _first(raw, "post_id", "id")
    caption_key, caption = _first(raw, "caption", "text", "description")
    ts_key, ts = _first(raw, "timestamp", "created_at")
    ip_key, ip = _first(raw, "location_ip", "ip_location")
    media_key, items = _first(raw, "media_files", "media", "images")
    tags: list[str] = []
    for key in ("tags", "topics", "hashtags"):
        tags += [t for t in _strings(raw.get(key), file, f"{at}.{key}") if t not in tags]
    meta_raw = raw.get("metadata") or {}
    if not isinstance(meta_raw, dict):
        raise ScenarioError(file, f"{at}.metadata", "expected a mapping")
    metadata = {str(k): v for k, v in ((k, _meta_value(v)) for k, v in meta_raw.items()) if v is not None}
    tagged = _strings(raw.get("tagged_users"), file, f"{at}.tagged_users")
    if tagged:
        metadata["tagged_users"] = ", ".join(tagged)
    if isinstance(items, (str, dict)):
        items = [items]
    if items is not None and not isinstance(items, list):
        raise ScenarioError(file, f"{at}.{media_key}", "expected a list of media paths")
    images = [im for j, item in enumerate(items or []) if (im := media.image(item, f"{at}.{media_key}[{j}]"))]
    return {
        "id": _text(pid, file, f"{at}.{id_key}") or f"post_{i + 1:03d}",
        "title": _text(raw.get("title"), file, f"{at}.title"),
        "caption": _text(caption, file, f"{at}.{caption_key}"),
        "tags": tags,
        "timestamp": _timestamp(ts, file, f"{at}.{ts_key}"),
        "ip_region": _text(ip, file, f"{at}.{ip_key}"),
        "images": images,
        "metadata": metadata,
    }


def _labels(path: Path, user_id: str, images: list[dict[str, Any]]) -> dict[str, Any]:
    """The labels file's fields merged into the record: profile, cohort, generator, image annotations."""
    file = str(path)
    data = read_structured(path)
    if not isinstance(data, dict):
        raise ScenarioError(file, None, "expected a mapping with 'profile' (see " + FORMAT_DOC + ")")
    unknown = sorted(set(data) - {"user_id", "cohort", "taxonomy", "generator", "images", "profile"})
    if unknown:
        raise ScenarioError(file, unknown[0], "unknown field (a labels file has user_id, cohort, taxonomy, generator, "
                                              "images, profile)")
    if "user_id" in data and str(data["user_id"]) != user_id:
        raise ScenarioError(file, "user_id", f"'{data['user_id']}' is not the user of the file beside it ('{user_id}')")
    if not isinstance(data.get("profile"), list):
        raise ScenarioError(file, "profile", "expected a list of attributes (the suite's profile format)")
    notes = data.get("images") or {}
    if not isinstance(notes, dict):
        raise ScenarioError(file, "images", "expected a mapping: media path -> {kind, text}")
    by_file = {im["file"]: im for im in images}
    for ref, note in notes.items():
        key = str(ref)
        if key not in by_file:
            raise ScenarioError(file, f"images.{key}", "no image of the user's posts has this path")
        if not isinstance(note, dict) or set(note) - {"kind", "text"}:
            raise ScenarioError(file, f"images.{key}", "expected a mapping with kind and text")
        by_file[key].update({k: _text(v, file, f"images.{key}.{k}") for k, v in note.items()})
    out = {"profile": data["profile"]}
    for key in ("cohort", "taxonomy", "generator"):
        if key in data:
            out[key] = data[key]
    return out


def read_user_file(json_file: Path) -> Located:
    """One argus user file (and its labels file, if any) as a User record and the folder its images are
    relative to. Raises ScenarioError naming the file and field of what cannot be read."""
    file = str(json_file)
    try:
        data = json.loads(json_file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise ScenarioError(file, None, f"not JSON: {e.msg}", e.lineno) from None
    except (OSError, UnicodeDecodeError) as e:
        raise ScenarioError(file, None, f"cannot read: {e}") from None
    if not isinstance(data, dict):
        raise ScenarioError(file, None, f"expected one {SCHEMA} object (a mapping with user_id and posts)")
    version = data.get("schema_version")
    if version not in (None, SCHEMA):
        raise ScenarioError(file, "schema_version", f"'{version}' is not {SCHEMA}")
    folder = json_file.parent
    id_key, uid = _first(data, "user_id", "id")
    user_id = _text(uid, file, id_key).strip() or json_file.stem
    meta = data.get("metadata") or {}
    if not isinstance(meta, dict):
        raise ScenarioError(file, "metadata", "expected a mapping (nickname, bio, ip_location)")
    posts = data.get("posts")
    if not isinstance(posts, list) or not posts:
        raise ScenarioError(file, "posts", "expected a non-empty list of posts")
    media = _Media(file, folder)
    record_posts = [_post(p, i, media, file) for i, p in enumerate(posts)]
    ip_key, ip = _first(meta, "ip_location", "location_ip")
    record: dict[str, Any] = {
        "id": user_id,
        "nickname": _text(meta.get("nickname"), file, "metadata.nickname") or user_id,
        "bio": _text(meta.get("bio"), file, "metadata.bio"),
        "ip_region": _text(ip, file, f"metadata.{ip_key}"),
        "posts": record_posts,
    }
    labels = labels_file(json_file)
    if labels.is_file():
        record.update(_labels(labels, user_id, [im for p in record_posts for im in p["images"]]))
    if media.decoded:
        folder = _stage(json_file, record_posts, media)
    return Located(record, folder, tuple(media.skipped))


def _stage(json_file: Path, posts: list[dict[str, Any]], media: _Media) -> Path:
    """A folder holding every image of a user with data URLs: those decoded, the others copied after
    the same confinement check as in place (a suite user has one folder its images are relative to)."""
    from localbench.benchmarks.sopri.image_check import image_problem
    from localbench.paths import cache_dir

    key = hashlib.sha256(json_file.read_bytes()).hexdigest()[:24]
    stage = cache_dir() / STAGING / key
    stage.mkdir(parents=True, exist_ok=True)
    for name, raw in media.decoded.items():
        target = stage / name
        if not target.is_file() or target.read_bytes() != raw:
            target.write_bytes(raw)
    for i, post in enumerate(posts):
        for j, im in enumerate(post["images"]):
            if im["file"] in media.decoded:
                continue
            src = json_file.parent / im["file"]
            problem = image_problem(src, json_file.parent)
            if problem:
                raise ScenarioError(str(json_file), f"posts[{i}].media_files[{j}]", f"image {problem}")
            dst = stage / im["file"]
            dst.parent.mkdir(parents=True, exist_ok=True)
            if not dst.is_file() or dst.stat().st_size != src.stat().st_size:
                dst.write_bytes(src.read_bytes())
    return stage
