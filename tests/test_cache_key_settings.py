"""The response cache is keyed on every preset setting that changes a reply, and on the hf grammar.

Editing a preset's chat_template_kwargs or engine_args, or switching serving.grammar between
xgrammar and outlines, must not replay answers cached under the old settings.
"""

from __future__ import annotations

import pytest

from fakes import ScriptedBackend
from localbench.serving.cache import ResponseCache, cache_key
from localbench.serving.client import StructuredClient
from localbench.serving.presets import ModelSource, Preset
from localbench.serving.types import GenerationRequest, ModelIdentity
from localbench.serving.weights import identity_of

REPO = "example-org/example-model"
REQ = GenerationRequest(messages=[{"role": "user", "content": "hello"}], seed=3)


def _preset(**fields) -> Preset:
    return Preset(name="hub-model", source=ModelSource(kind="hf-hub", repo=REPO, revision="abc"), **fields)


def _key(identity: ModelIdentity) -> str:
    return cache_key("vllm", identity, REQ, 3)


def test_identity_key_without_settings_is_unchanged():
    """Deliberately pinned: identities with no such settings keep the keys their caches were written with."""
    assert ModelIdentity("p", "src", "rev").key() == "p|src|rev|auto"
    assert identity_of(_preset(), REPO).key() == f"hub-model|{REPO}|abc|auto"
    assert identity_of(_preset(chat_template_kwargs={}, engine_args={}), REPO).key() == f"hub-model|{REPO}|abc|auto"


@pytest.mark.parametrize("fields", [
    {"chat_template_kwargs": {"enable_thinking": False}},
    {"engine_args": {"quantization": "awq"}},
    {"engine_args": {"kv_cache_dtype": "fp8"}},
    {"engine_args": {"tokenizer": "other-org/other-tokenizer"}},
])
def test_output_changing_preset_settings_change_the_key(fields):
    assert _key(identity_of(_preset(**fields), REPO)) != _key(identity_of(_preset(), REPO))


def test_each_setting_value_has_its_own_key():
    keys = {_key(identity_of(_preset(chat_template_kwargs={"enable_thinking": v}), REPO)) for v in (True, False)}
    keys |= {_key(identity_of(_preset(engine_args={"kv_cache_dtype": v}), REPO)) for v in ("fp8", "auto")}
    assert len(keys) == 4
    # the same settings written in another order are the same identity
    a = identity_of(_preset(engine_args={"quantization": "awq", "kv_cache_dtype": "fp8"}), REPO)
    b = identity_of(_preset(engine_args={"kv_cache_dtype": "fp8", "quantization": "awq"}), REPO)
    assert a == b


def test_engine_args_given_to_the_engine_count_too():
    assert (identity_of(_preset(), REPO, engine_args={"quantization": "awq"})
            == identity_of(_preset(engine_args={"quantization": "awq"}), REPO))


async def test_editing_a_preset_does_not_replay_stale_answers(tmp_path):
    """A cached run, then the preset's chat_template_kwargs are edited."""
    cache = ResponseCache(tmp_path / "c.sqlite")
    before = ScriptedBackend(lambda r: ("thinking answer", "stop"))
    before.identity = identity_of(_preset(chat_template_kwargs={"enable_thinking": True}), REPO)
    await StructuredClient(before, cache=cache).generate(REQ)

    after = ScriptedBackend(lambda r: ("plain answer", "stop"))
    after.identity = identity_of(_preset(chat_template_kwargs={"enable_thinking": False}), REPO)
    res = await StructuredClient(after, cache=cache).generate(REQ)
    assert not res.cached and res.text == "plain answer" and len(after.calls) == 1


def test_hf_grammar_backend_is_part_of_the_identity(tiny_dir):
    from localbench.serving.hf.engine import HFBackend

    xg = HFBackend.from_preset("tiny-random", max_batch_size=2)
    assert xg.identity.grammar == "xgrammar"
    # the same weights behind outlines, handed xgrammar's identity: the backend corrects it
    ol = HFBackend(xg.model, xg.tokenizer, identity=xg.identity, max_model_len=xg.max_model_len,
                   grammar="outlines", max_batch_size=2)
    assert ol.identity.grammar == "outlines"
    assert cache_key("hf", xg.identity, REQ, 3) != cache_key("hf", ol.identity, REQ, 3)
