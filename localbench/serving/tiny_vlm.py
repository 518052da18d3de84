"""The tiny random VLM: a Llava (tiny CLIP vision tower + tiny Llama) built in-process, no download.

Why: the image path of every engine needs a real multimodal model to run through in tests and on
a laptop, and no small VLM ships on PyPI. Like ``tiny-random`` it borrows the real SmolLM2
tokenizer (with an ``<image>`` token added) so prompts and grammars are real; its weights are
random, so its answers are nonsense that a JSON-schema grammar still keeps schema-valid.
The chat template is a file (``tiny_vlm_chat.jinja``) and is hashed with the weights' directory.
"""

from __future__ import annotations

import os
from pathlib import Path

IMAGE_TOKEN = "<image>"
IMAGE_SIZE = 64  # pixels per side after resizing and cropping
PATCH_SIZE = 16  # so an image is (64 / 16)^2 = 16 tokens
CHAT_TEMPLATE = Path(__file__).with_name("tiny_vlm_chat.jinja")


def build_tiny_vlm(base_dir: Path, out: Path, seed: int = 0) -> None:
    """Write a Llava model, tokenizer, image processor and processor into ``out``.

    The text model has tiny-random's shape (2 layers, hidden 64, head_dim 32: vLLM's CPU attention
    needs head_dim >= 32); the vision tower is a 2-layer CLIP over 64x64 images in 16x16 patches.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from transformers import (
        AutoTokenizer,
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
    )

    template = CHAT_TEMPLATE.read_text()
    tok = AutoTokenizer.from_pretrained(str(base_dir))
    tok.add_special_tokens({"additional_special_tokens": [IMAGE_TOKEN]})
    tok.chat_template = template
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    text = LlamaConfig(
        vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, head_dim=32, tie_word_embeddings=True,
        max_position_embeddings=2048, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
        pad_token_id=pad,
    )
    vision = CLIPVisionConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
                              image_size=IMAGE_SIZE, patch_size=PATCH_SIZE, projection_dim=64)
    config = LlavaConfig(
        vision_config=vision, text_config=text, image_token_index=tok.convert_tokens_to_ids(IMAGE_TOKEN),
        vision_feature_layer=-1, vision_feature_select_strategy="default",
        image_seq_length=(IMAGE_SIZE // PATCH_SIZE) ** 2, tie_word_embeddings=True,
    )
    torch.manual_seed(seed)
    LlavaForConditionalGeneration(config).save_pretrained(str(out))
    images = CLIPImageProcessor(size={"shortest_edge": IMAGE_SIZE},
                                crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    processor = LlavaProcessor(image_processor=images, tokenizer=tok, patch_size=PATCH_SIZE,
                               vision_feature_select_strategy="default", chat_template=template,
                               num_additional_image_tokens=1, image_token=IMAGE_TOKEN)
    processor.save_pretrained(str(out))  # saves the tokenizer (with the template) too
