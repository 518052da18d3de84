"""Image parts as the engines that take images need them: PIL images, data URIs, template messages.

Why here, once: the hf and vllm engines render a chat template whose image parts are placeholders
(``{"type": "image"}``, which the model's template turns into its image token) and hand the
decoded pixels beside it; the openai engine sends OpenAI's ``image_url`` parts with a data URI.
All three read an image the same way (``messages.image_bytes``) and refuse an unreadable one with
the same MessagePartError naming the message and the part.
"""

from __future__ import annotations

import base64
import io
import mimetypes
from typing import Any

from localbench.serving.messages import (
    Message,
    MessagePartError,
    image_bytes,
    is_image,
    parts_of,
    plain_text,
    text_of,
)
from localbench.serving.types import text_messages


def load_image(part: dict[str, Any], where: str = "image part") -> Any:
    """The image as an RGB ``PIL.Image`` (decoded now, so a broken file fails here, by name)."""
    from PIL import Image, UnidentifiedImageError

    data = image_bytes(part, where)
    try:
        img = Image.open(io.BytesIO(data))
        img.load()
    except (UnidentifiedImageError, OSError, ValueError) as e:
        raise MessagePartError(f"{where}: not an image PIL can read ({type(e).__name__}: {e})") from e
    return img.convert("RGB")


def mime_of(part: dict[str, Any]) -> str:
    """The part's MIME type: as given, guessed from a path's suffix, else from the bytes."""
    mime = part.get("mime_type") or (mimetypes.guess_type(str(part["path"]))[0] if "path" in part else None)
    if mime:
        return str(mime)
    from PIL import Image

    try:
        fmt = Image.open(io.BytesIO(image_bytes(part))).format or "png"
    except OSError:
        fmt = "png"
    return f"image/{fmt.lower()}"


def data_uri(part: dict[str, Any], where: str = "image part") -> str:
    """``data:<mime>;base64,...`` of the image's bytes (what OpenAI's ``image_url`` takes)."""
    data = part["data"] if "data" in part else base64.b64encode(image_bytes(part, where)).decode("ascii")
    return f"data:{mime_of(part)};base64,{data}"


def engine_messages(messages: list[Message], engine: str, preset: str, accepts_images: bool) -> list[Message]:
    """What an engine renders: for a model without images, ``text_messages`` (one string per
    message; an image part is refused with ImageInputError); for a VLM, the messages with every
    list checked (a malformed part is a MessagePartError), image parts kept and lists without
    images joined into one string, as a text model sees them."""
    if not accepts_images:
        return text_messages(messages, engine, preset)
    out: list[Message] = []
    for i, m in enumerate(messages, 1):
        content = m.get("content")
        if isinstance(content, list):
            parts = parts_of(m, f"message {i}")
            if not any(is_image(p) for p in parts):
                m = {**m, "content": text_of(m, f"message {i}")}  # type: ignore[misc]
        out.append(m)
    return out


def template_messages(messages: list[Message]) -> tuple[list[dict[str, Any]], list[Any]]:
    """Messages for a chat template (each image part a ``{"type": "image"}`` placeholder) and the
    decoded images in the order their placeholders appear."""
    if all(isinstance(m.get("content"), str) for m in messages):
        return list(messages), []  # type: ignore[arg-type]
    out: list[dict[str, Any]] = []
    images: list[Any] = []
    for i, m in enumerate(messages, 1):
        if isinstance(m.get("content"), str):
            out.append(dict(m))
            continue
        parts = []
        for j, p in enumerate(parts_of(m, f"message {i}"), 1):
            if is_image(p):
                images.append(load_image(p, f"message {i}, part {j}"))
                parts.append({"type": "image"})
            else:
                parts.append({"type": "text", "text": p["text"]})  # type: ignore[typeddict-item]
        out.append({**m, "content": parts})
    return out, images


def openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Messages in OpenAI's chat format: an image part becomes
    ``{"type": "image_url", "image_url": {"url": "data:<mime>;base64,..."}}``; messages without
    images are sent as before (one string each)."""
    out: list[dict[str, Any]] = []
    for i, m in enumerate(messages, 1):
        content = m.get("content")
        if isinstance(content, str) or not any(is_image(p) for p in content or []):
            out.append(plain_text([m])[0])  # type: ignore[arg-type]
            continue
        parts: list[dict[str, Any]] = []
        for j, p in enumerate(parts_of(m, f"message {i}"), 1):
            if is_image(p):
                parts.append({"type": "image_url", "image_url": {"url": data_uri(p, f"message {i}, part {j}")}})
            else:
                parts.append({"type": "text", "text": p["text"]})  # type: ignore[typeddict-item]
        out.append({**m, "content": parts})
    return out


def processor_inputs(processor: Any, messages: list[Message],
                     chat_template_kwargs: dict[str, Any] | None = None) -> tuple[list[int], dict[str, Any]]:
    """A prompt with images through a transformers processor: the prompt's token ids (each image
    expanded to the model's image tokens) and the processor's image tensors (``pixel_values``, and
    sizes or grids where the model takes them). The chat template is the processor's, else its
    tokenizer's."""
    chat, images = template_messages(messages)
    renderer = processor if getattr(processor, "chat_template", None) else processor.tokenizer
    text = renderer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True, **(chat_template_kwargs or {}))
    inputs = dict(processor(text=[text], images=images or None, return_tensors="pt", add_special_tokens=False))
    ids = inputs.pop("input_ids")[0].tolist()
    inputs.pop("attention_mask", None)
    return ids, inputs
