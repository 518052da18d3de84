"""`localbench generate`: one structured generation from a prompt and a schema file (a smoke test)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Optional

import typer


def register(app: typer.Typer) -> None:
    @app.command("generate")
    def generate(
        prompt: str = typer.Argument(..., help="the user message"),
        schema: Optional[Path] = typer.Option(None, "--schema", help="JSON schema file; omit for free text"),
        model: str = typer.Option("smollm2-135m", "--model", "-m", help="preset name or YAML path"),
        engine: str = typer.Option("auto", "--engine",
                                   help="auto | hf | vllm | openai (auto: openai with --base-url, else vllm on a GPU, hf on CPU)"),
        base_url: Optional[str] = typer.Option(None, "--base-url", help="openai engine: server URL (…/v1)"),
        system: Optional[str] = typer.Option(None, "--system", help="optional system message"),
        max_tokens: int = typer.Option(256, "--max-tokens"),
        temperature: float = typer.Option(0.0, "--temperature"),
        seed: int = typer.Option(0, "--seed"),
        cache: Optional[Path] = typer.Option(None, "--cache", help="response cache (SQLite) path"),
        no_cache: bool = typer.Option(False, "--no-cache", help="do not read or write the response cache"),
    ) -> None:
        """Generate one reply; with --schema it is decoded under that JSON schema and validated."""
        from localbench.serving.cache import ResponseCache, default_cache_path
        from localbench.serving.client import StructuredClient
        from localbench.serving.engines import open_backend, pick_engine
        from localbench.serving.output import OutputSpec
        from localbench.serving.presets import load_preset
        from localbench.serving.types import GenerationRequest

        spec = OutputSpec.from_file(schema) if schema else None  # bad schema: error before loading a model
        preset = load_preset(model)
        name = pick_engine(preset, engine, base_url)  # an unknown engine is one line, not a traceback
        opts = {"base_url": base_url} if base_url else {}
        backend = open_backend(preset, name, **opts)
        store = None if no_cache else ResponseCache(cache or default_cache_path())
        client = StructuredClient(backend, cache=store)
        messages = ([{"role": "system", "content": system}] if system else []) + [{"role": "user", "content": prompt}]
        req = GenerationRequest(messages=messages, output=spec, role="cli", max_tokens=max_tokens,
                                temperature=temperature, seed=seed)

        async def go():
            try:
                return await client.generate(req)
            finally:
                await client.aclose()

        res = asyncio.run(go())
        parsed = res.parsed.model_dump() if hasattr(res.parsed, "model_dump") else res.parsed
        typer.echo(json.dumps({"text": res.text, "parsed": parsed, **res.summary()}, indent=2, ensure_ascii=False))
        if not res.ok:
            raise typer.Exit(1)
