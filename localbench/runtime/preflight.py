"""Before the first simulation: every engine the run opens answers one constrained request of each
schema it will be asked for, so an engine that refuses a request stops the run seconds after it is
ready, with one line naming the preset, the schema and the engine's message, instead of failing
every simulation (or, on a GPU, dying inside vLLM on the first one).

What is sent is the request form a run sends (the engine's own structured-output path: grammar,
sampling parameters), with a short token budget and nothing cached or recorded: the reply's
content is not checked, only that the engine takes the request. Scripted players (no engine) are
not asked. The schemas come from the benchmark (``Benchmark.preflight_outputs``): the ones its first
scenario's roles use.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from localbench.errors import UserError
from localbench.serving.output import OutputSpec
from localbench.serving.types import GenerationRequest

MODEL_ENGINES = ("hf", "vllm", "openai")
"""Engines that run a model: the ones a preflight asks (a scripted or stand-in backend is not)."""
PREFLIGHT_TOKENS = 8
PROMPT = [{"role": "system", "content": "Answer with one JSON object."},
          {"role": "user", "content": "This is a check that the engine takes the request. Answer briefly."}]


class PreflightError(UserError):
    """An engine refused a request of a schema the run will send: the run stops incomplete (exit 1)."""

    exit_code = 1


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".rstrip(": ")


async def check_backend(backend: Any, outputs: Sequence[OutputSpec], label: str) -> list[str]:
    """Send one request of each kind of schema in ``outputs`` (the first of each name: schemas of one
    name differ only in their enums) to ``backend``; the lines of those refused (empty: every one
    taken). ``label`` names the preset and role in each line."""
    kinds = list({out.name: out for out in reversed(list(outputs))}.values())[::-1]  # the first of each name

    async def ask(out: OutputSpec) -> str | None:
        request = GenerationRequest(messages=PROMPT, output=out, max_tokens=PREFLIGHT_TOKENS, temperature=0.0, seed=0)
        try:
            await backend.complete(request)
        except Exception as e:  # noqa: BLE001 - whatever the engine raises is the refusal to report
            return f"preflight: {label} refused a request of schema '{out.name}' ({out.schema_hash}): {_one_line(e)}"
        return None

    answers = await asyncio.gather(*(ask(out) for out in kinds))  # one batch, as a run sends them
    return [a for a in answers if a is not None]


def engines_to_check(clients: Any, outputs: Mapping[str, Sequence[OutputSpec]]) -> list[tuple[Any, str, list[OutputSpec]]]:
    """(client, the first role it plays, the schemas of every role it plays) for each model engine
    among a run's clients (``RoleClients``); roles without a client here are left out."""
    by_client: dict[int, tuple[Any, str, list[OutputSpec]]] = {}
    for role, specs in outputs.items():
        if role not in clients.by_role and role not in clients.aliases:
            continue
        client = clients.for_role(role)
        if getattr(client.backend, "engine", None) not in MODEL_ENGINES:
            continue
        by_client.setdefault(id(client), (client, role, []))[2].extend(specs)
    return list(by_client.values())


async def check_engines(engines: Sequence[tuple[Any, str, Sequence[OutputSpec]]]) -> None:
    """Preflight each (client, role, schemas); PreflightError with the first refusal (and how many
    more there were)."""
    refused: list[str] = []
    for client, role, specs in engines:
        if getattr(client.backend, "engine", None) not in MODEL_ENGINES:
            continue
        label = f"preset '{client.backend.identity.preset}' ({role}, engine {client.backend.engine})"
        refused += await check_backend(client.backend, specs, label)
    if refused:
        more = f" (and {len(refused) - 1} more refused)" if len(refused) > 1 else ""
        raise PreflightError(refused[0] + more)
