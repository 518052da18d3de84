"""Messages whose content is a list of parts (text, images): types, cache key, budget, refusal.

A message with string content keeps the cache key it always had (pinned below to the values the
code computed before parts existed); an image is keyed by its bytes. An engine serving a text
model (no ``vision`` in its preset) refuses a request holding one with one line naming the engine
and the preset, before it counts, sends or generates anything (vision presets:
test_vlm_serving.py). Text-only parts count like the same text as one string.
(The vllm engine's refusal is tested in test_vllm_engine.py, the real vLLM server's in
test_openai_engine.py, on the engines those modules start once.)
"""

from __future__ import annotations

import json
import shutil

import pytest
from pydantic import BaseModel, TypeAdapter

from fakes import RecordingServer, ScriptedBackend
from localbench.errors import UserError
from localbench.serving import ImageInputError, Message, has_images, image_part, text_of, text_part
from localbench.serving.cache import ResponseCache, cache_key
from localbench.serving.client import StructuredClient
from localbench.serving.messages import MessagePartError, image_bytes, image_sha256, parts_of
from localbench.serving.output import OutputSpec
from localbench.serving.types import GenerationRequest, ModelIdentity, text_messages

pytestmark = pytest.mark.timeout(120)

IDENTITY = ModelIdentity("tiny-random", "tiny", "r0", "float32")
PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 3  # any bytes: nothing decodes the image here


class Label(BaseModel):
    level: str


def _with_image(image: dict, text: str = "Where was this taken?") -> list[Message]:
    return [{"role": "system", "content": "You profile people."},
            {"role": "user", "content": [text_part(text), image]}]


# -- the cache key ----------------------------------------------------------------------------


def test_string_messages_keep_the_cache_key_they_had_before_parts():
    """Pinned: these are the keys the code computed before messages could hold parts, so every
    existing cache stays valid."""
    free = GenerationRequest(messages=[{"role": "system", "content": "You judge."},
                                       {"role": "user", "content": 'héllo "x"'}],
                             max_tokens=64, temperature=0.7, seed=5)
    assert cache_key("hf", IDENTITY, free, 5) == "5a0a162541863735254a71a353fdfd9da2af86d7403a52d1760efc7217402f9c"
    structured = GenerationRequest(messages=[{"role": "user", "content": "judge this"}],
                                   output=OutputSpec.from_model(Label), seed=7)
    assert cache_key("vllm", IDENTITY, structured, 7) == \
        "34b1439dbacd7a046f18261cb2e3fb2f220eac89e38866083c43e2069a21c940"


def test_an_image_is_keyed_by_its_bytes_not_its_path(tmp_path):
    first = tmp_path / "a" / "photo.png"
    first.parent.mkdir()
    first.write_bytes(PNG)

    def key(image: dict, text: str = "Where was this taken?") -> str:
        return cache_key("hf", IDENTITY, GenerationRequest(messages=_with_image(image, text), seed=1), 1)

    k = key(image_part(path=first))
    moved = tmp_path / "b" / "renamed.png"
    moved.parent.mkdir()
    shutil.move(first, moved)
    assert key(image_part(path=moved)) == k  # moved: the same image
    assert key(image_part(data=PNG, mime_type="image/png")) == k  # inline: the same image
    moved.write_bytes(PNG[:-1] + b"\x00")
    assert key(image_part(path=moved)) != k  # edited in place: another image
    assert key(image_part(data=PNG, mime_type="image/png"), text="And this?") != k  # the text counts too
    assert k != cache_key("hf", IDENTITY, GenerationRequest(
        messages=[{"role": "system", "content": "You profile people."},
                  {"role": "user", "content": [text_part("Where was this taken?")]}], seed=1), 1)
    with pytest.raises(MessagePartError, match=r"message 2, part 2: cannot read image file .*gone\.png"):
        key(image_part(path=tmp_path / "gone.png"))


# -- the types ---------------------------------------------------------------------------------


def test_parts_round_trip_and_helpers(tmp_path):
    path = tmp_path / "p.jpg"
    path.write_bytes(PNG)
    inline, on_disk = image_part(data=PNG, mime_type="image/png"), image_part(path=path)
    assert inline["type"] == "image" and on_disk == {"type": "image", "path": str(path), "mime_type": "image/jpeg"}
    msgs: list[Message] = [{"role": "system", "content": "plain"},
                           {"role": "user", "content": [text_part("one"), inline, text_part("two"), on_disk]}]
    assert json.loads(json.dumps(msgs)) == msgs  # plain dicts: transcripts and bodies carry them as they are
    assert TypeAdapter(list[Message]).validate_python(msgs) == msgs
    assert image_bytes(inline) == image_bytes(on_disk) == PNG
    assert image_sha256(inline) == image_sha256(on_disk)
    assert [text_of(m) for m in msgs] == ["plain", "one\ntwo"]
    assert has_images(msgs) and not has_images(msgs[:1])
    assert not has_images([{"role": "user", "content": [text_part("only text")]}])
    assert parts_of(msgs[0]) == [{"type": "text", "text": "plain"}]
    with pytest.raises(MessagePartError, match="part 1: unknown part type 'image_url'"):
        parts_of({"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]})
    with pytest.raises(MessagePartError, match="message 2, part 1: unknown part type 'image_url'"):  # in an engine
        text_messages([msgs[0], {"role": "user", "content": [{"type": "image_url"}]}], "hf", "tiny-random")
    with pytest.raises(MessagePartError, match="either path= or data="):
        image_part()
    with pytest.raises(MessagePartError, match="needs mime_type"):
        image_part(data=PNG)
    with pytest.raises(MessagePartError, match="not valid base64"):
        image_part(data="not base64!", mime_type="image/png")


async def test_client_and_cache_pass_parts_through_unchanged(tmp_path):
    msgs = _with_image(image_part(data=PNG, mime_type="image/png"))
    sent = json.loads(json.dumps(msgs))
    be = ScriptedBackend(lambda r: ('{"level":"city"}', "stop"))
    cache = ResponseCache(tmp_path / "c.sqlite")
    req = GenerationRequest(messages=msgs, output=OutputSpec.from_model(Label), seed=3)
    first = await StructuredClient(be, cache=cache).generate(req)
    assert first.ok and not first.cached and be.calls[0].messages is msgs and msgs == sent
    again = await StructuredClient(ScriptedBackend(lambda r: pytest.fail("not replayed")), cache=cache).generate(
        GenerationRequest(messages=json.loads(json.dumps(msgs)), output=OutputSpec.from_model(Label), seed=3))
    assert again.cached and again.parsed == first.parsed


# -- the hf engine on the tiny random model ----------------------------------------------------


@pytest.fixture(scope="module")
def tiny(tiny_dir):
    from localbench.serving.hf.engine import HFBackend

    return HFBackend.from_preset("tiny-random", max_batch_size=4, batch_wait_ms=5)


async def test_hf_counts_text_parts_like_the_same_string(tiny):
    as_parts: list[Message] = [{"role": "system", "content": [text_part("You judge.")]},
                               {"role": "user", "content": [text_part("First line."), text_part("Second line.")]}]
    as_string: list[Message] = [{"role": "system", "content": "You judge."},
                                {"role": "user", "content": "First line.\nSecond line."}]
    assert tiny.prompt_ids(as_parts) == tiny.prompt_ids(as_string)
    assert tiny.count_tokens(as_parts) == tiny.count_tokens(as_string) > 10
    raw = await tiny.complete(GenerationRequest(messages=as_parts, max_tokens=3, seed=1))
    assert raw.tokens_in == tiny.count_tokens(as_string)


async def test_hf_refuses_an_image_before_counting_or_generating(tiny, tmp_path):
    from localbench.runtime.context import Budget, fit_prompt

    msgs = _with_image(image_part(data=PNG, mime_type="image/png"))
    line = "engine 'hf' (preset 'tiny-random') cannot take images: message 2 (user) has an image part"
    with pytest.raises(ImageInputError) as e:
        tiny.count_tokens(msgs)
    assert str(e.value) == line and isinstance(e.value, UserError)  # the CLI prints it as one line
    with pytest.raises(ImageInputError, match="cannot take images: message 2"):  # the context budget
        fit_prompt(lambda k: msgs, 0, Budget(tiny.max_model_len, 64), tiny.count_tokens)
    served, batches = tiny.requests_served, len(tiny.batch_sizes)
    cache = ResponseCache(tmp_path / "c.sqlite")
    with pytest.raises(ImageInputError) as e:
        await StructuredClient(tiny, cache=cache).generate(GenerationRequest(messages=msgs, max_tokens=4))
    assert str(e.value) == line
    assert (tiny.requests_served, len(tiny.batch_sizes), len(cache)) == (served, batches, 0)


# -- the openai engine against a local HTTP server ---------------------------------------------


@pytest.fixture
def local_server():
    srv = RecordingServer('{"level":"x"}', 17)
    yield srv
    srv.close()


async def test_openai_refuses_an_image_before_sending_and_sends_text_parts_as_text(local_server, tiny_dir):
    from localbench.serving.openai_engine import OpenAIBackend
    from localbench.serving.presets import load_preset

    backend = OpenAIBackend.from_preset(load_preset("tiny-random"), base_url=local_server.url, max_attempts=1)
    msgs = _with_image(image_part(data=PNG, mime_type="image/png"))
    line = "engine 'openai' (preset 'tiny-random') cannot take images: message 2 (user) has an image part"
    with pytest.raises(ImageInputError) as e:
        backend.count_tokens(msgs)
    assert str(e.value) == line
    with pytest.raises(ImageInputError) as e:
        await StructuredClient(backend).generate(GenerationRequest(messages=msgs, max_tokens=4))
    assert str(e.value) == line
    assert local_server.seen == [] and backend.requests_sent == 0  # nothing went out

    text_only: list[Message] = [{"role": "user", "content": [text_part("a"), text_part("b")]}]
    # the preset's tokenizer is local (tiny_dir), so the count needs no round trip; it counts the
    # text parts as the one string the server is sent
    joined: list[Message] = [{"role": "user", "content": "a\nb"}]
    assert backend.count_tokens(text_only) == backend.count_tokens(joined) > 0
    raw = await backend.complete(GenerationRequest(messages=text_only, max_tokens=4))
    assert raw.text == '{"level":"x"}'
    assert [(path, body["messages"]) for path, body in local_server.seen] == [
        ("/v1/chat/completions", [{"role": "user", "content": "a\nb"}])]
    assert text_only[0]["content"] == [text_part("a"), text_part("b")]  # the caller's messages untouched
    await backend.aclose()
