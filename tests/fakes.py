"""A scripted Backend for unit tests of the logic around engines (never a stand-in for a real engine)."""

from __future__ import annotations

from localbench.serving.types import GenerationRequest, ModelIdentity, RawCompletion


class ScriptedBackend:
    """Returns replies from a function of the request; counts calls."""

    engine = "scripted"
    grammar_backend = "none"
    max_model_len = 4096

    def __init__(self, reply):
        self.reply = reply
        self.calls: list[GenerationRequest] = []
        self.identity = ModelIdentity(preset="scripted", source="test", revision="1")

    async def complete(self, request: GenerationRequest) -> RawCompletion:
        self.calls.append(request)
        text, finish = self.reply(request)
        return RawCompletion(text=text, finish_reason=finish, tokens_in=10, tokens_out=len(text) // 4 + 1)

    def count_tokens(self, messages) -> int:
        return sum(len(m["content"]) // 4 + 4 for m in messages)

    async def aclose(self) -> None:
        pass

    def describe(self) -> dict:
        return {"engine": "scripted"}
