"""Checks every engine's tests apply the same way."""

from __future__ import annotations

import pytest

from localbench.serving.types import GenerationRequest, ImageInputError


async def assert_images_refused(backend, messages, line: str) -> None:
    """``count_tokens`` and ``complete`` both refuse a message with an image part with exactly
    ``line``, before anything is counted, sent or generated."""
    with pytest.raises(ImageInputError) as e:
        backend.count_tokens(messages)
    assert str(e.value) == line
    with pytest.raises(ImageInputError) as e:
        await backend.complete(GenerationRequest(messages=messages, max_tokens=2))
    assert str(e.value) == line
