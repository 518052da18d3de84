"""Chat messages whose content is a string or a list of parts (text and images).

A message is a plain dict, as the OpenAI chat API has it::

    {"role": "user", "content": "Who gets this?"}
    {"role": "user", "content": [{"type": "text", "text": "Where was this taken?"},
                                 {"type": "image", "path": "posts/17.jpg"}]}

A text part is OpenAI's own (``{"type": "text", "text": ...}``). An image part carries the image
either inline, ``{"type": "image", "data": <base64 of the file's bytes>, "mime_type": "image/png"}``,
or as a local file, ``{"type": "image", "path": "photo.jpg"}`` (absolute, or relative to the
working directory; ``mime_type`` optional, guessed from the suffix). Build parts with
``text_part`` and ``image_part``; read them with ``text_of``, ``has_images`` and ``image_bytes``.

An image is identified by its bytes (``image_sha256``), never by its path: the response cache
keys it so, so a moved file is the same image and an edited one is not. Messages stay plain dicts
all the way (transcripts, the cache, the engines), and a message with string content is exactly
what it always was.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import mimetypes
from pathlib import Path
from typing import Any, Literal, Union

from typing_extensions import Required, TypedDict  # typing.TypedDict: pydantic refuses it before 3.12

from localbench.errors import UserError


class TextPart(TypedDict):
    """A piece of text (OpenAI's ``{"type": "text", "text": ...}``)."""

    type: Literal["text"]
    text: str


class ImagePart(TypedDict, total=False):
    """An image: ``data`` (base64) with ``mime_type``, or ``path`` to a local file."""

    type: Required[Literal["image"]]
    data: str
    mime_type: str
    path: str


ContentPart = Union[TextPart, ImagePart]
Content = Union[str, list[ContentPart]]


class Message(TypedDict):
    """One chat message: role "system" | "user" | "assistant", content a string or a list of parts."""

    role: str
    content: Content


class MessagePartError(UserError, ValueError):
    """A malformed content part, or an image that cannot be read (names the message and the part)."""


def text_part(text: str) -> TextPart:
    return {"type": "text", "text": str(text)}


def image_part(*, path: str | Path | None = None, data: bytes | str | None = None,
               mime_type: str | None = None) -> ImagePart:
    """An image part from a local file (``path``) or from its bytes (``data``: raw bytes, or a
    base64 string). ``mime_type`` is required with ``data`` and guessed from a path's suffix."""
    if (path is None) == (data is None):
        raise MessagePartError("an image part takes either path= or data=, not both and not neither")
    if path is not None:
        part: ImagePart = {"type": "image", "path": str(path)}
        mime = mime_type or mimetypes.guess_type(str(path))[0]
        if mime:
            part["mime_type"] = mime
        return part
    if not mime_type:
        raise MessagePartError("an image part with data= needs mime_type= (e.g. image/png)")
    if isinstance(data, (bytes, bytearray)):
        encoded = base64.b64encode(bytes(data)).decode("ascii")
    else:
        encoded = str(data)
        _b64decode(encoded, "image part")  # refuse bad base64 now, not when the image is first read
    return {"type": "image", "data": encoded, "mime_type": mime_type}


def parts_of(message: Message | dict[str, Any], where: str = "message") -> list[ContentPart]:
    """The message's content as a list of parts (a string is one text part); malformed parts are
    a MessagePartError naming ``where``."""
    content = message.get("content", "")
    if isinstance(content, str):
        return [text_part(content)]
    if not isinstance(content, list):
        raise MessagePartError(f"{where}: content must be a string or a list of parts, not {type(content).__name__}")
    for i, part in enumerate(content, 1):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "text":
            if not isinstance(part.get("text"), str):
                raise MessagePartError(f"{where}, part {i}: a text part needs a string 'text'")
        elif kind == "image":
            if ("path" in part) == ("data" in part):
                raise MessagePartError(f"{where}, part {i}: an image part needs either 'path' or 'data'")
        else:
            raise MessagePartError(f"{where}, part {i}: unknown part type {kind!r} (use 'text' or 'image')")
    return content


def text_of(message: Message | dict[str, Any], where: str = "message") -> str:
    """The message's text: the string content, or its text parts joined by newlines (images skipped,
    the way vLLM's server joins text parts for a chat template that takes strings)."""
    content = message.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(p["text"] for p in parts_of(message, where) if p["type"] == "text")  # type: ignore[typeddict-item]


def is_image(part: Any) -> bool:
    return isinstance(part, dict) and part.get("type") == "image"


def first_image(messages: list[Message] | list[dict[str, Any]]) -> int | None:
    """The index (0-based) of the first message with an image part, or None."""
    for i, m in enumerate(messages):
        content = m.get("content")
        if isinstance(content, list) and any(is_image(p) for p in content):
            return i
    return None


def has_images(messages: list[Message] | list[dict[str, Any]]) -> bool:
    return first_image(messages) is not None


def _b64decode(data: str, where: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as e:
        raise MessagePartError(f"{where}: 'data' is not valid base64 ({e})") from e


def image_bytes(part: ImagePart | dict[str, Any], where: str = "image part") -> bytes:
    """The image's bytes: decoded from ``data``, or read from ``path``."""
    if "data" in part:
        return _b64decode(str(part["data"]), where)
    path = Path(str(part.get("path", "")))
    try:
        return path.read_bytes()
    except OSError as e:
        raise MessagePartError(f"{where}: cannot read image file {path} ({e.strerror or e})") from e


def image_sha256(part: ImagePart | dict[str, Any], where: str = "image part") -> str:
    """SHA-256 of the image's bytes: what identifies an image, wherever it is stored."""
    return hashlib.sha256(image_bytes(part, where)).hexdigest()


def keyed_messages(messages: list[Message] | list[dict[str, Any]]) -> list[Any]:
    """The messages as the response cache keys them: the list itself when every content is a
    string (the key such messages always had), else a copy whose image parts are replaced by
    ``{"type": "image", "sha256": <hash of the bytes>}``."""
    if all(isinstance(m.get("content"), str) for m in messages):
        return list(messages)
    out: list[Any] = []
    for i, m in enumerate(messages, 1):
        if isinstance(m.get("content"), str):
            out.append(m)
            continue
        where = f"message {i}"
        parts = []
        for j, p in enumerate(parts_of(m, where), 1):
            if is_image(p):
                parts.append({"type": "image", "sha256": image_sha256(p, f"{where}, part {j}")})
            else:
                parts.append(dict(p))
        out.append({**m, "content": parts})
    return out


def plain_text(messages: list[Message] | list[dict[str, Any]]) -> list[Message]:
    """The messages with every list of parts joined into one string (``text_of``); the list itself
    when every content is already a string. Callers refuse images first (``types.text_messages``)."""
    if all(isinstance(m.get("content"), str) for m in messages):
        return messages  # type: ignore[return-value]
    return [m if isinstance(m.get("content"), str) else {**m, "content": text_of(m, f"message {i}")}  # type: ignore[misc]
            for i, m in enumerate(messages, 1)]
