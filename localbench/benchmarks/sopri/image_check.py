"""Every image a user file names is a real, readable image inside the user's folder, checked before use.

`localbench data check` and the run's loading (both through ``loaders.to_user``) refuse, naming the
image's path: a symbolic link (anywhere between the user's folder and the file), a path that resolves
outside the user's folder (and so outside the suite), a zero-byte file, a file over ``MAX_BYTES``, a
file Pillow cannot identify as an image, one whose pixels exceed ``MAX_PIXELS``, and one that does not
decode to the end (truncated). A run thus never starts on an image it would fail on, and the viewer
never embeds a file from outside the suite.
"""

from __future__ import annotations

import warnings
from functools import lru_cache
from pathlib import Path

from PIL import Image, UnidentifiedImageError

MAX_BYTES = 20 * 1024 * 1024
MAX_PIXELS = 4096 * 4096


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` resolves to a place inside ``folder`` (both resolved, links followed)."""
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def image_problem(path: Path, folder: Path) -> str | None:
    """What is wrong with the image at ``path`` (relative to the user's ``folder``), or None."""
    rel = path.relative_to(folder) if path.is_relative_to(folder) else path
    p = folder
    for part in rel.parts:
        p = p / part
        if p.is_symlink():
            return f"{path}: is a symbolic link ({p} -> {p.readlink()}); images must be plain files in the suite"
    if not inside(path, folder):
        return f"{path}: resolves to {path.resolve()}, outside the user's folder {folder}"
    if not path.is_file():
        return f"{path}: not found"
    st = path.stat()
    return _decode_problem(str(path), st.st_size, st.st_mtime_ns)


@lru_cache(maxsize=4096)
def _decode_problem(path: str, size: int, mtime_ns: int) -> str | None:
    """Decoded once per file version (size, mtime): a suite is checked at every load."""
    if size == 0:
        return f"{path}: empty file (0 bytes), not an image"
    if size > MAX_BYTES:
        return f"{path}: {size} bytes, over the {MAX_BYTES}-byte limit for an image"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                w, h = im.size
                if w * h > MAX_PIXELS:
                    return f"{path}: {w}x{h} pixels, over the limit of {MAX_PIXELS} pixels"
                im.load()
    except UnidentifiedImageError:
        return f"{path}: not an image Pillow can read"
    except (Image.DecompressionBombWarning, Image.DecompressionBombError):
        return f"{path}: too many pixels (decompression bomb)"
    except (OSError, SyntaxError, ValueError) as e:
        return f"{path}: the image does not decode ({e}); truncated or corrupt"
    return None
