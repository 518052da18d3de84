"""SopriBench's gated Hugging Face release (``hf:NAME[:split]``) mapped onto ``User`` / ``Post`` /
``Attribute``: the one module that knows the release's columns.

The table is read with ``datasets.load_dataset(NAME, split=SPLIT, token=...)``: the token is
``HF_TOKEN`` from the environment, else the one ``huggingface-cli login`` saved (the dataset is
gated: accept its terms on the Hub first). ``NAME`` may also be a local folder (parquet/JSON files
in the same layout, or a ``save_to_disk`` folder), which is how the tests exercise this offline.
The layout expected (one row per user; list and struct columns may also be JSON text) is in
scenarios/sopri-mini/README.md, "Hugging Face layout"; a release whose layout differs fails with an
error naming the missing column. Images (PIL images, ``{"bytes", "path"}`` dicts or raw bytes) are
written into a cache folder, one per user, so ``User.image_path`` works like for a local suite.
"""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

from localbench.errors import UserError
from localbench.paths import cache_dir
from localbench.scenario_files import ScenarioError

DEFAULT_SPLIT = "train"
LAYOUT_DOC = "scenarios/sopri-mini/README.md (Hugging Face layout)"
# release column -> User field
USER_COLUMNS = {"user_id": "id", "nickname": "nickname", "posts": "posts", "profile": "profile"}
OPTIONAL_USER_COLUMNS = {"bio": "bio", "ip_region": "ip_region", "cohort": "cohort"}
POST_FIELDS = {"post_id": "id", "timestamp": "timestamp"}
OPTIONAL_POST_FIELDS = {"title": "title", "caption": "caption", "tags": "tags", "ip_region": "ip_region",
                        "metadata": "metadata"}
IMAGE_FIELDS = ("image",)
OPTIONAL_IMAGE_FIELDS = ("kind", "alt", "text")
ATTRIBUTE_FIELDS = ("slot", "value", "sensitivity")
OPTIONAL_ATTRIBUTE_FIELDS = ("path", "leak")


def parse_source(source: str) -> tuple[str, str]:
    """``hf:NAME[:split]`` -> (NAME, split)."""
    rest = source.removeprefix("hf:")
    name, _, split = rest.partition(":")
    if not name:
        raise ScenarioError(source, None, "expected hf:NAME[:split], e.g. hf:ORG/SopriBench:test")
    return name, split or DEFAULT_SPLIT


def _json(v: Any) -> Any:
    if isinstance(v, str) and v[:1] in "[{":
        try:
            return json.loads(v)
        except json.JSONDecodeError:
            return v
    return v


def load_table(name: str, split: str) -> Any:
    """The release's split as a ``datasets.Dataset``; a gated or missing dataset is a ScenarioError."""
    where = f"hf:{name}:{split}"
    try:
        import datasets
    except ImportError as e:
        raise UserError(f"{where}: loading from the Hugging Face Hub needs the 'datasets' package "
                        "(pip install 'localbench[data]')") from e
    local = Path(name).expanduser()
    try:
        if local.is_dir() and ((local / "state.json").is_file() or (local / "dataset_dict.json").is_file()):
            ds = datasets.load_from_disk(str(local))
            return ds[split] if isinstance(ds, datasets.DatasetDict) else ds
        return datasets.load_dataset(name, split=split, token=os.environ.get("HF_TOKEN") or None)
    except Exception as e:  # datasets raises many types (gated, network, missing split, schema)
        raise ScenarioError(where, None, f"cannot load: {type(e).__name__}: {e} (SopriBench's dataset is gated: accept "
                                         "its terms on the Hub, then set HF_TOKEN or run `huggingface-cli login`)") from e


def _require(where: str, have: Any, fields: Any, what: str) -> None:
    present = list(have)
    for f in fields:
        if f not in present:
            raise ScenarioError(where, what.format(f), f"missing column '{what.format(f)}': the release's layout differs "
                                                       f"from what localbench maps (present: {', '.join(map(str, present))}; "
                                                       f"expected layout: {LAYOUT_DOC})")


def _image_bytes(value: Any, where: str, field: str) -> bytes:
    """PNG/JPEG bytes of an image cell: a PIL image, a {"bytes", "path"} dict, raw bytes or a path."""
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow is a dependency
        Image = None  # type: ignore[assignment]
    if Image is not None and isinstance(value, Image.Image):
        buf = io.BytesIO()
        value.save(buf, format="PNG")
        return buf.getvalue()
    if isinstance(value, dict):
        if value.get("bytes"):
            return bytes(value["bytes"])
        if value.get("path") and Path(value["path"]).is_file():
            return Path(value["path"]).read_bytes()
    if isinstance(value, (bytes, bytearray)):
        return bytes(value)
    if isinstance(value, str) and Path(value).is_file():
        return Path(value).read_bytes()
    raise ScenarioError(where, field, f"cannot read an image from a {type(value).__name__} cell")


def _suffix(data: bytes) -> str:
    return ".png" if data[:8] == b"\x89PNG\r\n\x1a\n" else ".jpg" if data[:2] == b"\xff\xd8" else ".img"


def _write(path: Path, data: bytes) -> None:
    if not path.is_file() or path.read_bytes() != data:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_bytes(data)
        tmp.replace(path)


def map_row(row: dict[str, Any], where: str, folder: Path) -> dict[str, Any]:
    """One release row as a ``User`` mapping; its images written into ``folder``."""
    row = {k: _json(v) for k, v in row.items()}
    user: dict[str, Any] = {USER_COLUMNS[c]: row[c] for c in USER_COLUMNS if c not in ("posts", "profile")}
    user.update({f: row[c] for c, f in OPTIONAL_USER_COLUMNS.items() if row.get(c) not in (None, "")})
    user["id"] = str(user["id"])
    posts = []
    for i, p in enumerate(row["posts"] or []):
        p = {k: _json(v) for k, v in dict(p).items()}
        _require(where, p, POST_FIELDS, "posts[]." + "{}")
        post: dict[str, Any] = {f: p[c] for c, f in POST_FIELDS.items()}
        post["id"] = str(post["id"])
        post.update({f: p[c] for c, f in OPTIONAL_POST_FIELDS.items() if p.get(c) is not None})
        if isinstance(post.get("metadata"), dict):
            post["metadata"] = {str(k): str(v) for k, v in post["metadata"].items() if v is not None}
        images = []
        for j, im in enumerate(p.get("images") or []):
            im = dict(im)
            _require(where, im, IMAGE_FIELDS, "posts[].images[]." + "{}")
            data = _image_bytes(im["image"], where, f"posts[{i}].images[{j}].image")
            file = f"{post['id']}-{j + 1}{_suffix(data)}"
            _write(folder / file, data)
            images.append({"file": file, **{k: str(im[k]) for k in OPTIONAL_IMAGE_FIELDS if im.get(k) is not None}})
        post["images"] = images
        posts.append(post)
    user["posts"] = posts
    profile = []
    for a in row["profile"] or []:
        a = {k: _json(v) for k, v in dict(a).items()}
        _require(where, a, ATTRIBUTE_FIELDS, "profile[]." + "{}")
        attr = {k: a[k] for k in (*ATTRIBUTE_FIELDS, *OPTIONAL_ATTRIBUTE_FIELDS) if a.get(k) is not None}
        if isinstance(attr.get("leak"), dict):
            attr["leak"] = {k: v for k, v in attr["leak"].items() if v is not None}
        profile.append(attr)
    user["profile"] = profile
    return user


def hf_users(source: str) -> list[tuple[str, dict[str, Any], Path]]:
    """(label, User mapping, image folder) for every row of ``hf:NAME[:split]``."""
    name, split = parse_source(source)
    where = f"hf:{name}:{split}"
    table = load_table(name, split)
    _require(where, table.column_names, USER_COLUMNS, "{}")
    root = cache_dir() / "sopri-hf" / "".join(c if c.isalnum() or c in "-_." else "_" for c in f"{name}_{split}")
    out = []
    for n, row in enumerate(table):
        uid = str(row["user_id"])
        folder = root / "".join(c if c.isalnum() or c in "-_." else "_" for c in uid)
        label = f"{where}/{uid}"
        try:
            out.append((label, map_row(dict(row), label, folder), folder))
        except ScenarioError:
            raise
        except (TypeError, ValueError, KeyError) as e:
            raise ScenarioError(label, None, f"row {n}: cannot map ({type(e).__name__}: {e}); expected layout: "
                                             f"{LAYOUT_DOC}") from e
    if not out:
        raise ScenarioError(where, None, "the split has no rows")
    if root.is_dir():  # users no longer in the release leave no stale folders behind
        keep = {f.name for _, _, f in out}
        for d in root.iterdir():
            if d.is_dir() and d.name not in keep:
                shutil.rmtree(d, ignore_errors=True)
    return out
