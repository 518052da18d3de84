"""OCR for SopriBench: Debian's tesseract, each (image, region) read once and kept across runs.

What a text-only attacker gets for an image (the text fallback, ``posts``) and what the ``ocr`` and
``crop`` tools return come from here. Reads are cached by the image bytes, the region, the
language and tesseract's version: in memory for the run, and on disk (``cache_dir()/ocr`` for a
run's simulator), so a second run or a resumed one over the same suite reads nothing again.

Why tesseract's command line with ``OMP_THREAD_LIMIT=1``, a few images at once: measured on a
2-core machine over the suite's images, tesseract's own OpenMP threads made each page 3.5x slower
(0.66 s against 0.19 s one at a time; 0.10 s each with two at once), and they competed with the
model's threads for the same cores. Parallelism comes from ``workers`` concurrent reads instead.
(The variable is set for the tesseract process only: in the Python process it would reach
PyTorch's oneDNN, see serving/hf/linear.py.)
"""

from __future__ import annotations

import functools
import hashlib
import io
import json
import os
import re
import subprocess
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from PIL import Image as PILImage

PREPARE_VERSION = "1"  # how an image is prepared for tesseract (grayscale, small crops enlarged): in the cache key


class OcrError(RuntimeError):
    """tesseract is missing or failed on an image."""


@functools.lru_cache(maxsize=1)
def tesseract_version() -> str:
    """``tesseract 5.3.0`` (the first line of ``tesseract --version``); OcrError when it is not installed."""
    try:
        out = subprocess.run(["tesseract", "--version"], capture_output=True, text=True, check=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as e:
        raise OcrError(f"tesseract is not usable ({e}); install Debian's tesseract-ocr "
                       f"(scripts/install.sh does, as root)") from e
    lines = (out.stdout or out.stderr).strip().splitlines()
    return lines[0].strip() if lines else "tesseract (unknown version)"


def default_workers() -> int:
    """Concurrent tesseract processes: one per core the process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


class OcrReader:
    """Tesseract over image bytes, each (image, region) read once: cached in memory by the bytes'
    sha256, and on disk under ``folder`` when one is given. At most ``workers`` tesseract processes
    run at a time, whatever the number of threads asking."""

    def __init__(self, folder: Path | None = None, lang: str = "eng", max_memory: int = 512,
                 workers: int | None = None):
        self.folder, self.lang, self.max_memory = folder, lang, max_memory
        self.workers = workers or default_workers()
        self._memory: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        self._slots = threading.BoundedSemaphore(self.workers)
        self._gates: dict[str, threading.Lock] = {}  # reads in progress, by key
        self.runs = 0  # tesseract processes started by this reader (neither cache had the read)

    @staticmethod
    def version() -> str:
        return tesseract_version()

    def read_file(self, path: Path, box: list[float] | None = None) -> str:
        return self.read(path.read_bytes(), box)

    def prefetch(self, paths: Sequence[Path]) -> list[str]:
        """Read many images, ``workers`` at a time, into the caches (a run's preparation); returns
        the failures, one line each. A failed image is not fatal here: the simulation that shows it
        reads it again and records the error as its own."""
        def one(path: Path) -> str:
            try:
                self.read_file(path)
            except (OcrError, OSError, ValueError) as e:
                return f"{path}: {e}"
            return ""

        if not paths:
            return []
        with ThreadPoolExecutor(max_workers=min(self.workers, len(paths)), thread_name_prefix="ocr") as pool:
            return [line for line in pool.map(one, paths) if line]

    def read(self, data: bytes, box: list[float] | None = None) -> str:
        key = self._key(data, box)
        with self._lock:
            gate = self._gates.setdefault(key, threading.Lock())
        with gate:  # a second thread asking for the same read waits for the first one's answer
            try:
                return self._read_once(key, data, box)
            finally:
                with self._lock:
                    self._gates.pop(key, None)

    def _read_once(self, key: str, data: bytes, box: list[float] | None) -> str:
        with self._lock:
            if key in self._memory:
                self._memory.move_to_end(key)
                return self._memory[key]
        disk = self.folder / f"{key[:32]}.txt" if self.folder is not None else None
        if disk is not None and disk.is_file():
            text = disk.read_text(encoding="utf-8")
        else:
            with self._slots:
                text = self._tesseract(data, box)
                with self._lock:
                    self.runs += 1
            if disk is not None:
                disk.parent.mkdir(parents=True, exist_ok=True)
                tmp = disk.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
                tmp.write_text(text, encoding="utf-8")
                tmp.replace(disk)
        with self._lock:
            self._memory[key] = text
            while len(self._memory) > self.max_memory:
                self._memory.popitem(last=False)
        return text

    def _key(self, data: bytes, box: list[float] | None) -> str:
        meta = json.dumps([box, self.lang, PREPARE_VERSION,
                           tesseract_version() if self.folder is not None else ""]).encode()
        return hashlib.sha256(data + meta).hexdigest()

    def _tesseract(self, data: bytes, box: list[float] | None) -> str:
        from PIL import Image, ImageOps

        with Image.open(io.BytesIO(data)) as src:
            img = ImageOps.grayscale(crop(src.convert("RGB"), box))
        if img.height < 120 or img.width < 240:  # a small crop: tesseract reads small print better enlarged
            scale = min(4, max(2, 240 // max(1, min(img.size))))
            img = img.resize((img.width * scale, img.height * scale), Image.LANCZOS)
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        env = {**os.environ, "OMP_THREAD_LIMIT": "1"}
        try:
            out = subprocess.run(["tesseract", "stdin", "stdout", "-l", self.lang, "--psm", "3"], input=buf.getvalue(),
                                 capture_output=True, env=env, timeout=300)
        except (OSError, subprocess.SubprocessError) as e:
            raise OcrError(f"tesseract failed to run ({e}); install Debian's tesseract-ocr "
                           f"(scripts/install.sh does, as root)") from e
        if out.returncode != 0:
            raise OcrError(f"tesseract exited {out.returncode}: {out.stderr.decode(errors='replace').strip()[-500:]}")
        return tidy(out.stdout.decode("utf-8", errors="replace"))


def crop(img: PILImage.Image, box: list[float] | None) -> PILImage.Image:
    """The region ``box`` = [left, top, right, bottom] (fractions 0..1) of ``img``; all of it without a box."""
    if not box:
        return img
    left, top, right, bottom = (float(x) for x in box)
    if not (0 <= left < right <= 1 and 0 <= top < bottom <= 1):
        raise ValueError(f"box {box} must be [left, top, right, bottom] with 0 ≤ left < right ≤ 1 and "
                         f"0 ≤ top < bottom ≤ 1")
    w, h = img.size
    region = (int(left * w), int(top * h), max(int(left * w) + 1, round(right * w)),
              max(int(top * h) + 1, round(bottom * h)))
    return img.crop(region)


def tidy(text: str) -> str:
    lines = [re.sub(r"[ \t]+", " ", ln).strip() for ln in text.splitlines()]
    return "\n".join(ln for ln in lines if ln)
