"""What a vLLM server started by localbench says about itself: ``GET /localbench/server``.

A client's in-flight limit belongs to the server it talks to (the server's ``max_num_seqs``), not
to the machine the client runs on: a CPU laptop's 64 against an H100 server's 1,024 leaves the
card mostly idle. vLLM shows its configuration only on a development endpoint (``/server_info``,
off unless ``VLLM_SERVER_DEV_MODE=1``, and not for a shared server), so ``localbench serve`` (and
every server ``VLLMServer`` starts, Slurm tasks included) adds this one read-only path to vLLM's
own app through vLLM's ``--middleware`` flag. The card also says which grammar backend the server
constrains with, so a client knows it may send ``xgrammar_quirks.json_grammar`` (the grammar the
in-process engine uses) rather than a JSON schema that the server would translate with the
control-character hole still open.

A server without the card (a plain ``vllm serve``, SGLang, llama.cpp) answers 404: the client then
keeps the spec's ``serving.max_concurrency`` or its default and sends ``response_format``.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

CARD_PATH = "/localbench/server"
MIDDLEWARE = "localbench.serving.server_card.server_card"
"""What ``--middleware`` loads in the server (vLLM imports it by this dotted path)."""


@dataclass(frozen=True)
class ServerCard:
    """The facts a client sizes itself and its requests by."""

    max_num_seqs: int
    max_num_batched_tokens: int | None = None
    max_model_len: int | None = None
    gpu_memory_utilization: float | None = None
    structured_outputs_backend: str | None = None
    disable_any_whitespace: bool | None = None
    vllm_version: str | None = None

    @property
    def takes_grammars(self) -> bool:
        """Whether the server compiles an xgrammar EBNF ``structured_outputs.grammar`` as the
        in-process engine does (its backend pinned to xgrammar, as localbench starts it)."""
        return self.structured_outputs_backend == "xgrammar"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ServerCard":
        fields = set(cls.__dataclass_fields__)
        if not isinstance(data.get("max_num_seqs"), int) or data["max_num_seqs"] < 1:
            raise ValueError(f"a server card needs a positive integer max_num_seqs, got {data.get('max_num_seqs')!r}")
        return cls(**{k: v for k, v in data.items() if k in fields})


def card_of(vllm_config: Any) -> ServerCard:
    """The card of a running vLLM engine, from its ``VllmConfig``."""
    import vllm

    so = vllm_config.structured_outputs_config
    return ServerCard(
        max_num_seqs=int(vllm_config.scheduler_config.max_num_seqs),
        max_num_batched_tokens=int(vllm_config.scheduler_config.max_num_batched_tokens),
        max_model_len=int(vllm_config.model_config.max_model_len),
        gpu_memory_utilization=float(vllm_config.cache_config.gpu_memory_utilization),
        structured_outputs_backend=str(so.backend),
        disable_any_whitespace=bool(so.disable_any_whitespace),
        vllm_version=str(vllm.__version__),
    )


async def server_card(request: Any, call_next: Any) -> Any:
    """vLLM ``--middleware``: answer ``GET /localbench/server`` with the card; pass the rest on."""
    if request.url.path != CARD_PATH:
        return await call_next(request)
    from fastapi.responses import JSONResponse

    return JSONResponse(card_of(request.app.state.vllm_config).as_dict())


def read_card(root_url: str, headers: dict[str, str] | None = None, transport: Any = None,
              timeout: float = 2.0) -> ServerCard | None:
    """The card of the server at ``root_url`` (``http://host:port``), or None where it has none
    (404, another kind of server, an unreadable answer). A server that cannot be reached at all, or
    does not answer within ``timeout`` (a live one answers at once), is None too: the first request
    says what is wrong, with its retries."""
    import httpx

    try:
        with httpx.Client(transport=transport, headers=headers or {}, timeout=timeout) as client:
            r = client.get(f"{root_url}{CARD_PATH}")
        if r.status_code != 200:
            return None
        return ServerCard.from_dict(r.json())
    except (httpx.HTTPError, ValueError, TypeError, AttributeError):
        return None
