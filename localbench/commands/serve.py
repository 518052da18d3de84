"""`localbench serve PRESET`: run vLLM's OpenAI-compatible server for a preset until Ctrl-C.

Another machine (or another run) then uses it with the ``openai`` engine and the printed base
URL; the server has the same grammar settings as the in-process ``vllm`` engine and serves the
model under the preset's name, so the client needs the preset file but not the weights. Its card
(``GET /localbench/server``) tells clients how many sequences it batches, so they keep that many
requests in flight whatever machine they run on.
"""

from __future__ import annotations

import json
import signal
import time

import typer


def _example(base_url: str, model: str) -> str:
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Give a verdict."}],
        "max_tokens": 64,
        "response_format": {"type": "json_schema", "json_schema": {
            "name": "verdict", "strict": True,
            "schema": {"type": "object", "properties": {"verdict": {"enum": ["pass", "fail"]}},
                       "required": ["verdict"], "additionalProperties": False}}},
    }
    return (f"curl -s {base_url}/chat/completions -H 'Content-Type: application/json' "
            f"-d '{json.dumps(body, separators=(',', ':'))}'")


def _stop_on_sigterm(signum, frame) -> None:
    """scancel, preemption and `kill` send SIGTERM: stop the server as Ctrl-C would (no orphan engine)."""
    raise KeyboardInterrupt


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve(
        preset: str = typer.Argument(..., help="model preset name (serving/NAME.yaml) or a preset YAML file"),
        port: int = typer.Option(0, "--port", help="port to listen on (0: a free one)"),
        host: str = typer.Option("127.0.0.1", "--host", help="address to bind (0.0.0.0 to serve other machines)"),
        startup_timeout: float = typer.Option(600.0, "--startup-timeout", help="seconds to wait for /health"),
        gpu_memory_utilization: float = typer.Option(
            None, "--gpu-memory-utilization", min=0.05, max=0.99,
            help="this server's share of its GPU's memory (default: the preset's); two servers on one GPU "
                 "need shares that add up to at most about 0.9"),
        max_num_seqs: int = typer.Option(
            None, "--max-num-seqs", min=1,
            help="sequences the server batches at once (default: vLLM's for the card); clients read it "
                 "from the server and keep that many requests in flight"),
    ) -> None:
        """Start vLLM's OpenAI-compatible server for PRESET; Ctrl-C stops it."""
        from localbench.serving.presets import load_preset
        from localbench.serving.server import VLLMServer, public_host
        from localbench.serving.server_card import CARD_PATH, read_card
        from localbench.serving.types import EngineError

        p = load_preset(preset)  # PresetError (a UserError) prints as one line
        server = VLLMServer(p, port=port or None, host=host, startup_timeout=startup_timeout,
                            gpu_memory_utilization=gpu_memory_utilization, max_num_seqs=max_num_seqs)
        signal.signal(signal.SIGTERM, _stop_on_sigterm)
        typer.echo(f"starting vLLM for preset '{p.name}' on {server.root_url} (log: {server.log_path}) ...")
        try:
            server.start()
            base_url = f"http://{public_host(host)}:{server.port}/v1"  # 0.0.0.0: this machine's name
            card = read_card(server.root_url)
            facts = (f"  max_num_seqs {card.max_num_seqs}, memory share {card.gpu_memory_utilization}, "
                     f"grammar {card.structured_outputs_backend} (clients read these at {CARD_PATH})"
                     if card is not None else "")
            typer.echo(f"ready: {base_url}  (model name: {server.model}){facts}")
            typer.echo(f"use it: localbench generate 'Hello' -m {p.name} --engine openai --base-url {base_url}")
            typer.echo(f"   or, in a run spec: serving: {{engine: openai, base_url: {base_url}}}")
            typer.echo(f"try it: {_example(base_url, server.model)}")
            typer.echo("Ctrl-C stops the server.")
            while server.running:
                time.sleep(1.0)
            raise EngineError(f"the vLLM server exited; log {server.log_path}:\n{server.log_tail()}")
        except KeyboardInterrupt:
            typer.echo("stopping ...")
        finally:
            server.stop()
