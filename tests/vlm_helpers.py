"""Shared helpers for the VLM serving tests: real PNG images made with PIL, and a schema."""

from __future__ import annotations

import io
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from localbench.serving.messages import Message, image_part, text_part

PRESETS = Path(__file__).parent / "presets"
VLM = str(PRESETS / "tiny-random-vlm.yaml")  # the tests' tiny Llava: a preset path goes where a name does
IDEFICS3 = str(PRESETS / "tiny-random-idefics3.yaml")  # the tests' tiny Idefics3 (vLLM's image path on CPU)


class Guess(BaseModel):
    """What an attacker model might answer about a photo: bounded, so the grammar is tight."""

    model_config = ConfigDict(extra="forbid")
    city: str = Field(max_length=24)
    age: int = Field(ge=0, le=120)


def png(color: tuple[int, int, int], size: tuple[int, int] = (90, 70), stripe: bool = False) -> bytes:
    """A real PNG: a solid colour (a white stripe across it with ``stripe``)."""
    from PIL import Image, ImageDraw

    img = Image.new("RGB", size, color)
    if stripe:
        ImageDraw.Draw(img).rectangle([0, size[1] // 3, size[0], size[1] // 2], fill=(255, 255, 255))
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


def photo_messages(image: dict, text: str = "Where was this photo taken, and how old is the poster?") -> list[Message]:
    return [{"role": "system", "content": "You infer facts about people from their posts. Answer in JSON."},
            {"role": "user", "content": [text_part(text), image]}]


def inline(color: tuple[int, int, int], **kw) -> dict:
    return image_part(data=png(color, **kw), mime_type="image/png")
