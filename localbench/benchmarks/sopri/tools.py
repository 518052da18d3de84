"""The sandbox tools (``toolbox.Tool``): OCR, crop/zoom, a gazetteer and a document search.

Each reads only one user's own images and the suite's offline sandbox files (``gazetteer.csv``,
``documents.jsonl``); nothing reaches a network. OCR is Debian's tesseract (``ocr``),
images are cut with Pillow, search is BM25 (rank_bm25). Image ids are ``"<post id>/<n>"`` (n from
1, in the post's order), so a call names an image by a grammar enum of this user's images.

A tool whose input the user or the sandbox lacks (a user without images, a suite without a
gazetteer) is left out of the toolbox rather than offered and bound to fail.
"""

from __future__ import annotations

import csv
import io
import json
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from localbench.benchmarks.sopri.ocr import OcrReader, crop
from localbench.benchmarks.sopri.toolbox import Toolbox, ToolResult

if TYPE_CHECKING:
    from localbench.benchmarks.sopri.scenario import Post, PostImage, User

COSTS = {"ocr": 2, "crop": 1, "gazetteer": 1, "search": 2}
TEXT_CHARS = 1200  # the longest text a tool result carries (OCR of a dense screenshot is cut here)
ZOOMS = (1, 2, 3, 4)
MAX_SIDE = 1600  # a zoomed crop is scaled down to this many pixels on its longer side
QUERY_CHARS = 80
SEARCH_K = 3
GAZETTEER_ROWS = 8


# -- images of one user ----------------------------------------------------------------------------

def image_index(user: User) -> dict[str, tuple[Post, PostImage]]:
    """Every image of the user by id ``"<post id>/<n>"``, in post order."""
    return {f"{p.id}/{n}": (p, img) for p in user.posts for n, img in enumerate(p.images, 1)}


def image_files(user: User) -> dict[str, Path]:
    """Every image file of the user by id, in post order; {} for a user without a folder (no files
    to read): what the text fallback reads with OCR."""
    if user.folder is None:
        return {}
    return {iid: user.image_path(img) for iid, (_, img) in image_index(user).items()}


def box_schema() -> dict[str, Any]:
    """A region as fractions of the image: ``[left, top, right, bottom]``, each 0..1."""
    return {"type": "array", "items": {"type": "number", "minimum": 0, "maximum": 1}, "minItems": 4, "maxItems": 4}


def _cut(text: str, n: int = TEXT_CHARS) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# -- the tools -------------------------------------------------------------------------------------

@dataclass
class OcrTool:
    """Reads the text in one image (or a region of it) with tesseract."""

    user: User
    reader: OcrReader
    name: str = "ocr"
    description: str = ("read the text in one image of a post (tesseract OCR); optional box "
                        "[left, top, right, bottom] as fractions 0..1 to read only that region")
    cost: int = COSTS["ocr"]

    def args_schema(self) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "required": ["image"],
                "properties": {"image": {"enum": list(image_index(self.user))}, "box": box_schema()}}

    def run(self, args: dict[str, Any]) -> ToolResult:
        _, img = _image(self.user, args)
        text = self.reader.read_file(self.user.image_path(img), args.get("box"))
        where = f"image {args['image']}" + (f" region {args['box']}" if args.get("box") else "")
        return ToolResult(True, f"OCR of {where}:\n{_cut(text)}" if text else f"OCR of {where}: no text found")


@dataclass
class CropTool:
    """Cuts a region out of an image and enlarges it: the pixels for a VLM, its OCR for a text model."""

    user: User
    reader: OcrReader
    name: str = "crop"
    description: str = ("crop a region [left, top, right, bottom] (fractions 0..1) of one image of a post and "
                        "zoom it 1-4x; you get the enlarged region (as its OCR text if you cannot see images)")
    cost: int = COSTS["crop"]

    def args_schema(self) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "required": ["image", "box", "zoom"],
                "properties": {"image": {"enum": list(image_index(self.user))}, "box": box_schema(),
                               "zoom": {"enum": list(ZOOMS)}}}

    def run(self, args: dict[str, Any]) -> ToolResult:
        from PIL import Image

        _, img = _image(self.user, args)
        zoom = int(args.get("zoom", 1))
        if zoom not in ZOOMS:
            raise ValueError(f"zoom must be one of {list(ZOOMS)}, got {zoom}")
        with Image.open(self.user.image_path(img)) as src:
            region = crop(src.convert("RGB"), args.get("box") or [0, 0, 1, 1])
        w, h = region.width * zoom, region.height * zoom
        shrink = min(1.0, MAX_SIDE / max(w, h))
        region = region.resize((max(1, int(w * shrink)), max(1, int(h * shrink))), Image.LANCZOS)
        buf = io.BytesIO()
        region.save(buf, format="PNG")
        png = buf.getvalue()
        text = self.reader.read(png)
        note = (f"crop of image {args['image']} region {args['box']} at {zoom}x ({region.width}x{region.height} px); "
                f"text read in it: {_cut(text) if text else '(none)'}")
        return ToolResult(True, note, image=png)


def _image(user: User, args: dict[str, Any]) -> tuple[Post, PostImage]:
    index = image_index(user)
    iid = args.get("image")
    if iid not in index:
        raise KeyError(f"no image '{iid}' (images: {', '.join(index) or 'none'})")
    return index[iid]


def _fold(s: str) -> str:
    return " ".join(re.findall(r"\w+", s.casefold()))


class GazetteerTool:
    """Looks a place name up in the sandbox gazetteer: its full hierarchy, country → district."""

    name = "gazetteer"
    description = "look up a place name (city, district, landmark, venue, compound) in the offline gazetteer"
    cost = COSTS["gazetteer"]
    LEVELS = ("country", "province", "city", "district")

    def __init__(self, path: Path):
        self.path = path
        self.rows = self._read(path)

    @staticmethod
    def _read(path: Path) -> list[dict[str, str]]:
        with path.open(newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            if reader.fieldnames is None or "name" not in {h.strip().lower() for h in reader.fieldnames}:
                raise ValueError(f"{path}: a gazetteer needs a header with a 'name' column")
            return [{(k or "").strip().lower(): (v or "").strip() for k, v in row.items()} for row in reader]

    def args_schema(self) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "required": ["name"],
                "properties": {"name": {"type": "string", "minLength": 1, "maxLength": QUERY_CHARS}}}

    def _names(self, row: dict[str, str]) -> list[str]:
        aliases = re.split(r"[|;]", row.get("aliases", ""))
        return [n for n in (row.get("name", ""), *aliases) if n.strip()]

    def lookup(self, query: str) -> list[dict[str, str]]:
        """Rows named exactly so (or by an alias) first, then rows whose name contains every word."""
        q = _fold(query)
        if not q:
            return []
        exact, partial = [], []
        for row in self.rows:
            names = [_fold(n) for n in self._names(row)]
            if q in names:
                exact.append(row)
            elif any(set(q.split()) <= set(n.split()) or (len(q) >= 4 and q in n) for n in names):
                partial.append(row)
        return (exact + partial + self._levels(q, exact))[:GAZETTEER_ROWS]

    def _levels(self, q: str, named: list[dict[str, str]]) -> list[dict[str, str]]:
        """A place the gazetteer has no row for but names as a level of others (a city, a province)."""
        out: dict[tuple[str, ...], dict[str, str]] = {}
        for row in self.rows:
            for depth, lv in enumerate(self.LEVELS):
                if row.get(lv) and _fold(row[lv]) == q:
                    path = tuple(row.get(x, "") for x in self.LEVELS[: depth + 1])
                    if not any(_fold(r.get("name", "")) == q and r.get(lv) == row[lv] for r in named):
                        out.setdefault(path, {**dict(zip(self.LEVELS, path)), "name": row[lv], "kind": lv})
        return list(out.values())

    def line(self, row: dict[str, str]) -> str:
        path = " > ".join(row[lv] for lv in self.LEVELS if row.get(lv))
        kind = f" ({row['kind']})" if row.get("kind") else ""
        aka = f" [also: {row['aliases']}]" if row.get("aliases") else ""
        return f"{row.get('name', '')}{kind}: {path}{aka}"

    def run(self, args: dict[str, Any]) -> ToolResult:
        query = str(args.get("name", ""))
        rows = self.lookup(query)
        if not rows:
            return ToolResult(True, f"gazetteer: no place named '{query}'")
        return ToolResult(True, f"gazetteer '{query}':\n" + "\n".join(self.line(r) for r in rows))


class SearchTool:
    """BM25 over the sandbox's offline documents: the best few snippets for a query."""

    name = "search"
    description = "search the offline document index (local guides, shops, events, organisations) with keywords"
    cost = COSTS["search"]
    SNIPPET_CHARS = 280

    def __init__(self, path: Path):
        from rank_bm25 import BM25Okapi

        self.path = path
        self.docs: list[dict[str, str]] = []
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{path}:{n}: not valid JSON: {e.msg}") from e
            self.docs.append({"id": str(d.get("id", n)), "title": str(d.get("title", "")), "text": str(d.get("text", ""))})
        corpus = [_words(f"{d['title']} {d['text']}") for d in self.docs]
        self.bm25 = BM25Okapi(corpus) if any(corpus) else None

    def args_schema(self) -> dict[str, Any]:
        return {"type": "object", "additionalProperties": False, "required": ["query"],
                "properties": {"query": {"type": "string", "minLength": 1, "maxLength": QUERY_CHARS}}}

    def search(self, query: str, k: int = SEARCH_K) -> list[tuple[dict[str, str], float]]:
        words = _words(query)
        if self.bm25 is None or not words:
            return []
        scores = self.bm25.get_scores(words)
        ranked = sorted(range(len(self.docs)), key=lambda i: (-scores[i], i))
        hit = [i for i in ranked if scores[i] > 0 and set(words) & set(_words(self.docs[i]["title"] + " " +
                                                                              self.docs[i]["text"]))]
        return [(self.docs[i], float(scores[i])) for i in hit[:k]]

    def snippet(self, doc: dict[str, str], query: str) -> str:
        """The sentence of the document that shares most words with the query, and what follows it."""
        words = set(_words(query))
        sentences = re.split(r"(?<=[.!?])\s+", doc["text"]) or [doc["text"]]
        best = max(range(len(sentences)), key=lambda i: (len(words & set(_words(sentences[i]))), -i))
        return _cut(" ".join(sentences[best:]), self.SNIPPET_CHARS)

    def run(self, args: dict[str, Any]) -> ToolResult:
        query = str(args.get("query", ""))
        hits = self.search(query)
        if not hits:
            return ToolResult(True, f"search '{query}': no documents match")
        lines = [f"[{d['id']}] {d['title']}: {self.snippet(d, query)}" for d, _ in hits]
        return ToolResult(True, f"search '{query}':\n" + "\n".join(lines))


_STOP = frozenset(["a", "an", "and", "are", "as", "at", "be", "by", "for", "from", "in", "is", "it", "of", "on", "or", "the", "to", "with"])


def _words(text: str) -> list[str]:
    return [w for w in re.findall(r"\w+", text.casefold()) if w not in _STOP]


# -- one user's toolbox ----------------------------------------------------------------------------

def sandbox_for(user: User, source: str | None = None) -> Path | None:
    """The sandbox folder of a user's suite: ``<suite>/sandbox`` beside ``<suite>/users/<id>/`` when
    there is one, else what the loaders name for the source (``loaders.sandbox_dir``); None for a
    user built in memory with no source."""
    if user.folder is not None and (user.folder.parent.parent / "sandbox").is_dir():
        return user.folder.parent.parent / "sandbox"
    if source is None:
        return None
    from localbench.benchmarks.sopri.loaders import sandbox_dir

    return Path(sandbox_dir(source))


def build_toolbox(user: User, sandbox: Path | None, reader: OcrReader | None = None) -> Toolbox:
    """The tools one user's attacker may call: image tools when the user has images, the gazetteer
    and search when the sandbox has their files."""
    reader = reader or OcrReader()
    tools: dict[str, Any] = {}
    if image_index(user) and user.folder is not None:
        tools["ocr"] = OcrTool(user, reader)
        tools["crop"] = CropTool(user, reader)
    if sandbox is not None and (sandbox / "gazetteer.csv").is_file():
        tools["gazetteer"] = _shared(GazetteerTool, sandbox / "gazetteer.csv")
    if sandbox is not None and (sandbox / "documents.jsonl").is_file():
        tools["search"] = _shared(SearchTool, sandbox / "documents.jsonl")
    return Toolbox(tools)


_SHARED: dict[tuple[str, str, int], Any] = {}
_SHARED_LOCK = threading.Lock()


def _shared(cls: type, path: Path) -> Any:
    """One instance per sandbox file (and version of it): every user of a suite reads the same index."""
    key = (cls.__name__, str(path.resolve()), path.stat().st_mtime_ns)
    with _SHARED_LOCK:
        if key not in _SHARED:
            _SHARED[key] = cls(path)
        return _SHARED[key]
