"""Servers a run talks to (issue 47): each role may have a server of its own (``serving.base_urls``:
the simulated user on another model than the agent's), and a server started with an API key is
reached with the key from the environment variable ``serving.api_key_env`` names. Through the
real openai engine against a recording HTTP server."""

from __future__ import annotations

import asyncio

import pytest

from localbench.errors import UserError
from localbench.spec import EngineOptions, RunSpec, SpecError


def test_each_role_is_reached_at_its_own_server_and_the_run_id_does_not_move():
    plain = RunSpec(benchmark="asb", models={"agent": "tiny-random", "user_sim": "smollm2-135m"},
                    serving={"engine": "openai", "base_url": "http://a:1/v1", "judge_base_url": "http://j:1/v1"})
    split = RunSpec(benchmark="asb", models={"agent": "tiny-random", "user_sim": "smollm2-135m"},
                    serving={"engine": "openai", "base_url": "http://a:1/v1", "judge_base_url": "http://j:1/v1",
                             "base_urls": {"user_sim": "http://u:1/v1"}})
    assert [split.url_for(r) for r in ("agent", "user_sim", "judge")] == ["http://a:1/v1", "http://u:1/v1", "http://j:1/v1"]
    assert [plain.url_for(r) for r in ("agent", "user_sim", "judge")] == ["http://a:1/v1", "http://a:1/v1", "http://j:1/v1"]
    assert split.resolved_run_id == plain.resolved_run_id  # where a server is is not a result
    with pytest.raises((SpecError, ValueError), match="serving.base_urls: .*has no role 'attacker'"):
        RunSpec(benchmark="asb", serving={"base_urls": {"attacker": "http://x:1/v1"}})


def test_the_roles_clients_talk_to_their_own_servers_with_the_key():
    from fakes import RecordingServer

    from localbench.runtime.clients import client_for
    from localbench.serving.types import GenerationRequest

    agent_srv, user_srv = RecordingServer("hello", 5), RecordingServer("hi", 5)
    spec = RunSpec(benchmark="asb", models={"agent": "tiny-random", "user_sim": "smollm2-135m"}, no_cache=True,
                   serving={"engine": "openai", "base_url": f"{agent_srv.url}/v1",
                            "base_urls": {"user_sim": f"{user_srv.url}/v1"}, "api_key_env": "LB_TEST_SERVER_KEY"})
    import os

    os.environ["LB_TEST_SERVER_KEY"] = "sekrit"
    try:
        async def go():
            for role in ("agent", "user_sim"):
                client = client_for(spec, role, "/tmp/unused-run-dir")
                await client.backend.complete(GenerationRequest(messages=[{"role": "user", "content": role}], max_tokens=4))
                await client.aclose()

        asyncio.run(go())
    finally:
        del os.environ["LB_TEST_SERVER_KEY"]
    (path_a, body_a), (path_u, body_u) = agent_srv.seen[-1], user_srv.seen[-1]
    assert (body_a["model"], body_u["model"]) == ("tiny-random", "smollm2-135m")
    assert agent_srv.headers[-1]["Authorization"] == user_srv.headers[-1]["Authorization"] == "Bearer sekrit"


def test_a_named_key_variable_that_is_unset_is_one_error_naming_it(monkeypatch):
    from localbench.serving.session import open_client

    monkeypatch.delenv("LB_TEST_SERVER_KEY", raising=False)
    with pytest.raises(UserError, match="serving.api_key_env.*LB_TEST_SERVER_KEY is not set"):
        open_client("tiny-random", EngineOptions(engine="openai", api_key_env="LB_TEST_SERVER_KEY"),
                    "http://127.0.0.1:9/v1", None)
