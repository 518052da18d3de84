"""The ``openai`` engine: any OpenAI-compatible server (``vllm serve``, SGLang, llama.cpp's server).

Structured requests go out as ``response_format: {"type": "json_schema", ...}`` with
``strict: true``, and the server's grammar does the constraining; to a server that shows
localbench's card (``server_card``: every server ``localbench serve`` starts) and constrains with
xgrammar, they go out as ``structured_outputs: {"grammar": ...}`` with the grammar the in-process
engine uses (``xgrammar_quirks.json_grammar``), so both paths reject replies at the same rate.
The client keeps at most ``max_concurrency`` requests in flight (the server batches them) and
records the peak, so a test can check the bound. Unless the caller fixes it (the spec's
``serving.max_concurrency``), that bound is the server's own ``max_num_seqs``, read from its card;
a server without one gets DEFAULT_MAX_CONCURRENCY.

Transient trouble (connection refused or reset, timeouts, 429, 5xx) is retried with exponential
backoff and jitter; when the attempts run out the caller gets one EngineError that names the
endpoint, the attempts, the time spent and the last error. Any other 4xx is the request's own
fault and is raised at once with the server's message. A server that comes back (restarted on
the same port) is simply used again: there is no connection state to rebuild.

The model name sent is the preset's name, which ``localbench serve`` gives its server
(``--served-model-name``), so a client needs the preset file but not the weights, and the name is
the same on every host. When the server answers that it has no such model, the client asks it
once (``GET /v1/models``) whether it serves the preset under vLLM's default name (the hub repo id
or the local path, for a server started by hand with ``vllm serve REPO``) and uses that. An
explicit ``model=`` is sent as given. Tokens are counted with the preset's tokenizer where it
loads from local files (no round trip per turn), else by the server's ``/tokenize``; counts are
remembered per prompt.

Images (vision presets only; other presets refuse them with ImageInputError before anything is
sent): an image part goes out as OpenAI's ``{"type": "image_url", "image_url": {"url":
"data:<mime>;base64,..."}}``, with the message's text parts beside it; messages without images
are sent as one string each, as before. ``/tokenize`` gets the same messages, so a vLLM server
counts the image tokens itself; counting locally falls back to the model's processor.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import threading
import time
from typing import Any

import httpx

from localbench.serving.presets import Preset
from localbench.serving.server_card import ServerCard, read_card
from localbench.serving.types import Backend, EngineError, GenerationRequest, Message, ModelIdentity, RawCompletion
from localbench.serving.messages import has_images
from localbench.serving.vision import engine_messages, openai_messages

DEFAULT_TIMEOUT_S = 600.0
"""How long one request may take in all (``serving.request_timeout_s``, ``--request-timeout``): a long
generation on a busy server is not a failure."""

DEFAULT_FIRST_BYTE_S = 30.0
"""How long the server may send nothing at all (``serving.first_byte_timeout_s``, ``--first-byte-timeout``).
A request that has heard nothing for this long makes the client ask ``GET /health`` (a busy server
answers it at once); a server that answers neither accepts connections but is hung, and is named
in one line without retrying (about 35 s with the defaults)."""

DEFAULT_MAX_CONCURRENCY = 64
"""Requests in flight to a server that does not say how many it batches (no ``server_card``)."""

PROBE_TIMEOUT_S = 5.0
WAIT_NOTE_EVERY_S = 10.0
"""While a request waits, a line on stderr every this many seconds: "waiting on URL for N s"."""


class ServerNotAnswering(EngineError):
    """The server accepts connections but answers nothing, not even its health check: hung."""


COUNT_MEMO = 1024  # prompts whose token counts are remembered


def _prompt_key(messages: list[Message]) -> str:
    import json

    return json.dumps(messages, sort_keys=True, ensure_ascii=False, default=str)


class BaseUrlError(EngineError):
    """A base URL that is not one (no http:// or https://): bad input, exit status 2, not a dead server."""

    exit_code = 2


def _normalize_base_url(url: str) -> str:
    """``http://h:p`` or ``http://h:p/v1/`` → ``http://h:p/v1``; a URL without http(s):// is a
    one-line error at once (httpx would retry it as a transport failure)."""
    if not url.startswith(("http://", "https://")):
        raise BaseUrlError(f"base URL {url!r} must start with http:// or https:// (e.g. http://{url.split('://')[-1]})")
    url = url.rstrip("/")
    return url if url.endswith("/v1") else url + "/v1"


def _note(line: str) -> None:
    import sys

    print(f"[localbench] {line}", file=sys.stderr, flush=True)


def _why(e: httpx.HTTPError) -> str:
    """A short human reason for a transport failure."""
    text = str(e) or type(e).__name__
    if isinstance(e, httpx.ConnectError):
        cause: BaseException | None = e
        while cause is not None:  # httpx wraps httpcore wraps OSError wraps the real reason
            if isinstance(cause, ConnectionRefusedError):
                return "connection refused"
            cause = cause.__cause__ or cause.__context__
        return f"cannot connect ({text})"
    if isinstance(e, httpx.TimeoutException):
        return f"timed out ({type(e).__name__})"
    if isinstance(e, httpx.RemoteProtocolError):
        return f"server closed the connection ({text})"
    return f"{type(e).__name__}: {text}"


def _server_message(r: httpx.Response) -> str:
    try:
        body = r.json()
    except ValueError:
        return r.text.strip()[:500] or r.reason_phrase
    err = body.get("error") if isinstance(body, dict) else None
    if isinstance(err, dict) and err.get("message"):
        return str(err["message"])[:500]
    if isinstance(body, dict) and body.get("detail"):
        return str(body["detail"])[:500]
    return str(body)[:500]


def _xgrammar_here() -> bool:
    """Whether this client can build the grammar a card-showing server takes (xgrammar installed)."""
    import importlib.util

    return importlib.util.find_spec("xgrammar") is not None


class OpenAIBackend(Backend):
    """Backend over an OpenAI-compatible HTTP server; build it with ``from_preset``."""

    engine = "openai"

    def __init__(self, base_url: str, model: str, identity: ModelIdentity, *, max_model_len: int,
                 max_concurrency: int = 64, api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT_S,
                 max_attempts: int = 6, backoff_s: float = 0.5, backoff_max_s: float = 20.0,
                 chat_template_kwargs: dict[str, Any] | None = None, tokenizer_location: str | None = None,
                 grammar_backend: str = "server", transport: httpx.AsyncBaseTransport | None = None,
                 model_aliases: list[str] | None = None, preset: Preset | None = None,
                 accepts_images: bool | None = None, first_byte_timeout: float = DEFAULT_FIRST_BYTE_S,
                 server_card: ServerCard | None = None, concurrency_source: str = "given"):
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be at least 1")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        self.base_url = _normalize_base_url(base_url)
        self.root_url = self.base_url[: -len("/v1")]
        self.model = model
        self.identity = identity
        self.max_model_len = max_model_len
        self.max_concurrency = max_concurrency
        self.concurrency_source = concurrency_source  # "spec", "server" (its card) or "default"
        self.server_card = server_card
        self.sends_grammar = server_card is not None and server_card.takes_grammars and _xgrammar_here()
        self.max_attempts = max_attempts
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self.timeout = timeout
        self.first_byte_timeout = first_byte_timeout
        self._heard_at = 0.0  # when the server last sent anything (a reply, a health answer)
        self._silent_at = -1e9  # when a health probe last heard nothing
        self._probe_lock: asyncio.Lock | None = None
        self._last_wait_note = 0.0
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.tokenizer_location = tokenizer_location
        self.preset = preset  # where a local tokenizer comes from when tokenizer_location is None
        # whether image parts are sent (as image_url data URIs): the preset's ``vision`` unless given
        self.accepts_images = bool(preset.vision if accepts_images is None and preset is not None else accepts_images)
        # other names the server may serve this model under; asked for once, after a 404
        self.model_aliases = [a for a in (model_aliases or []) if a and a != model]
        self._model_checked = not self.model_aliases
        self._model_lock = threading.Lock()
        self.grammar_backend = grammar_backend
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._sem = asyncio.Semaphore(max_concurrency)
        self._client: httpx.AsyncClient | None = None
        self._transport = transport  # tests put an httpx.MockTransport here
        self._tokenizer: Any = None
        self._processor: Any = None
        self._tokenize_endpoint: bool | None = None
        self._local_tokenizer: bool | None = None  # None: not tried yet (see _local_tokenizer_ready)
        self._counts: dict[str, int] = {}  # prompt -> tokens, the most recent COUNT_MEMO
        self.in_flight = 0
        self.peak_in_flight = 0
        self.requests_sent = 0
        self.retries = 0

    @classmethod
    def from_preset(cls, preset: Preset, base_url: str | None = None, max_concurrency: int | None = None,
                    api_key: str | None = None, timeout: float = DEFAULT_TIMEOUT_S, max_attempts: int = 6,
                    model: str | None = None, grammar_backend: str = "server", backoff_s: float = 0.5,
                    backoff_max_s: float = 20.0, transport: httpx.AsyncBaseTransport | None = None,
                    first_byte_timeout: float = DEFAULT_FIRST_BYTE_S, **_: Any) -> "OpenAIBackend":
        """A client for a server that serves ``preset``, without its weights.

        ``model`` defaults to the preset's name (what ``localbench serve`` serves it as; the hub
        repo id or local path are tried after a 404); an explicit ``model`` is sent as given.
        ``grammar_backend`` only records what the server constrains with (a server started by
        ``localbench serve`` uses xgrammar, and says so on its card); options meant for other
        engines are ignored. ``max_concurrency``: requests in flight; None takes the server's
        ``max_num_seqs`` from its card (``server_card``), else DEFAULT_MAX_CONCURRENCY.
        """
        from localbench.serving.weights import declared_identity, served_names

        if not base_url:
            raise EngineError(
                f"the openai engine needs base_url= (e.g. http://127.0.0.1:8000/v1); "
                f"start a server with `localbench serve {preset.name}`"
            )
        names = [model] if model else served_names(preset)
        root = _normalize_base_url(base_url)[: -len("/v1")]
        sync = transport if isinstance(transport, httpx.BaseTransport) else None
        card = read_card(root, {"Authorization": f"Bearer {api_key}"} if api_key else None, transport=sync)
        if card is not None and card.takes_grammars:
            grammar_backend = card.structured_outputs_backend or grammar_backend
        if max_concurrency is not None:
            source = "spec"
        elif card is not None:
            max_concurrency, source = card.max_num_seqs, "server"
        else:
            max_concurrency, source = DEFAULT_MAX_CONCURRENCY, "default"
        return cls(base_url, names[0], declared_identity(preset), max_model_len=preset.max_model_len,
                   max_concurrency=max_concurrency, server_card=card, concurrency_source=source, api_key=api_key, timeout=timeout, max_attempts=max_attempts,
                   chat_template_kwargs=preset.chat_template_kwargs, grammar_backend=grammar_backend,
                   backoff_s=backoff_s, backoff_max_s=backoff_max_s, transport=transport,
                   model_aliases=names[1:], preset=preset, first_byte_timeout=first_byte_timeout)

    # -- the served model name ---------------------------------------------------------------

    def _may_switch(self, body: dict[str, Any]) -> bool:
        """Whether a 404 for ``body`` may be cured by another of the model's names."""
        return "model" in body and (body["model"] != self.model or not self._model_checked)

    def _switch_model(self, sent: str) -> bool:
        """After a 404 for a request that named ``sent``: whether to resend it under ``self.model``.

        Asks the server once (``GET /v1/models``) which of this model's names it serves; only
        names from ``model_aliases`` are taken, never a model the preset does not name.
        """
        with self._model_lock:
            if self.model != sent:
                return True  # another request found the served name meanwhile
            if self._model_checked:
                return False
            self._model_checked = True
            sync = self._transport if isinstance(self._transport, httpx.BaseTransport) else None
            try:
                with httpx.Client(transport=sync, headers=self._headers, timeout=30.0) as client:
                    r = client.get(f"{self.base_url}/models")
                served = {m.get("id") for m in r.json().get("data", [])} if r.status_code == 200 else set()
            except (httpx.HTTPError, ValueError, AttributeError, TypeError):
                return False
            if self.model in served:
                return False
            for alias in self.model_aliases:
                if alias in served:
                    self.model = alias
                    return True
            return False

    # -- HTTP with retries -------------------------------------------------------------------

    def _http(self) -> httpx.AsyncClient:
        if self._client is None:
            limits = httpx.Limits(max_connections=self.max_concurrency, max_keepalive_connections=self.max_concurrency)
            # reads are bounded by _send's watch (the request timeout in all, the first-byte probe)
            timeout = httpx.Timeout(None, connect=min(self.timeout, self.first_byte_timeout))
            self._client = httpx.AsyncClient(timeout=timeout, limits=limits, headers=self._headers,
                                             transport=self._transport)
        return self._client

    def _delay(self, attempt: int) -> float:
        """Exponential backoff with full jitter in its upper half (attempt counts from 1)."""
        d = min(self.backoff_max_s, self.backoff_s * 2 ** (attempt - 1))
        return d * (0.5 + random.random() / 2)

    async def _send(self, url: str, body: dict[str, Any]) -> tuple[httpx.Response | None, str]:
        """One POST under the concurrency bound: the response, or None and why there is none.

        While it waits: a line every WAIT_NOTE_EVERY_S ("waiting on URL for N s"); after
        ``first_byte_timeout`` of silence, a health probe (ServerNotAnswering if that is silent too);
        after ``timeout`` in all, None (retried like any timeout)."""
        async with self._sem:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
            self.requests_sent += 1
            t0 = time.monotonic()
            task = asyncio.ensure_future(self._http().post(url, json=body))
            try:
                while True:
                    done, _ = await asyncio.wait({task}, timeout=min(1.0, self.first_byte_timeout / 4))
                    if done:
                        r = task.result()
                        self._heard_at = time.monotonic()
                        return r, ""
                    now = time.monotonic()
                    if now - t0 >= self.timeout:
                        return None, f"no answer in {now - t0:.1f} s (request timeout {self.timeout:g} s)"
                    if now - max(t0, self._heard_at) >= self.first_byte_timeout and not await self._answers():
                        raise ServerNotAnswering(
                            f"{self.base_url} accepts connections but sent nothing for {time.monotonic() - t0:.0f} s, "
                            f"not even to GET {self.root_url}/health (first-byte limit {self.first_byte_timeout:g} s: "
                            f"--first-byte-timeout or serving.first_byte_timeout_s; {self.retries} retries before): "
                            "the server is hung; restart it and rerun the same command")
                    if now - t0 >= WAIT_NOTE_EVERY_S and now - self._last_wait_note >= WAIT_NOTE_EVERY_S:
                        self._last_wait_note = now
                        _note(f"waiting on {url} for {now - t0:.0f} s ({self.in_flight} requests in flight, "
                              f"{self.retries} retries so far)")
            except httpx.HTTPError as e:  # transport trouble: refused, reset, timeout
                return None, _why(e)
            finally:
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, httpx.HTTPError):
                        await task
                self.in_flight -= 1

    async def _answers(self) -> bool:
        """Whether the server sends anything to ``GET /health`` within PROBE_TIMEOUT_S (any status will
        do: it proves the server reads and writes). One probe at a time per client, on its own
        connection, so a pool full of waiting requests cannot make a live server look hung."""
        if self._probe_lock is None:
            self._probe_lock = asyncio.Lock()
        async with self._probe_lock:
            if time.monotonic() - self._heard_at < self.first_byte_timeout:
                return True  # another request's probe (or reply) just heard it
            if time.monotonic() - self._silent_at < self.first_byte_timeout:
                return False  # another request's probe just found it silent: requests waiting together fail together
            try:
                async with httpx.AsyncClient(transport=self._transport, headers=self._headers,
                                             timeout=min(PROBE_TIMEOUT_S, self.first_byte_timeout)) as probe:
                    await probe.get(f"{self.root_url}/health")
            except httpx.TimeoutException:
                self._silent_at = time.monotonic()
                return False
            except httpx.HTTPError:
                return True  # refused or reset: not hung; the request's own outcome says what it is
            self._heard_at = time.monotonic()
            return True

    async def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        url = f"{self.base_url}{path}"
        t0 = time.monotonic()
        last = "no attempt made"
        for attempt in range(1, self.max_attempts + 1):
            r, why = await self._send(url, body)
            if r is not None and r.status_code == 404 and self._may_switch(body) \
                    and await asyncio.to_thread(self._switch_model, body["model"]):
                body = {**body, "model": self.model}  # the server serves this model under another of its names
                r, why = await self._send(url, body)
            if r is None:
                last = why
            else:
                if r.status_code < 400:
                    try:
                        return r.json()
                    except ValueError:
                        last = f"HTTP {r.status_code} with a body that is not JSON"
                elif r.status_code == 429 or r.status_code >= 500:
                    last = f"HTTP {r.status_code}: {_server_message(r)}"
                else:
                    hint = ""
                    if r.status_code == 404 and self.preset is not None and self.model == self.preset.name:
                        hint = (f" (the model name sent is the preset's, '{self.model}': serve it with "
                                f"`localbench serve {self.model}` or vLLM's --served-model-name {self.model})")
                    raise EngineError(f"{url} rejected the request (HTTP {r.status_code}): {_server_message(r)}{hint}")
            if attempt < self.max_attempts:
                self.retries += 1
                delay = self._delay(attempt)
                if attempt == 1 or time.monotonic() - self._last_wait_note >= WAIT_NOTE_EVERY_S:
                    self._last_wait_note = time.monotonic()  # one line per request's first retry, then a few
                    _note(f"retry {attempt} of {self.max_attempts - 1} for {url} in {delay:.1f} s: {last} "
                          f"({self.retries} retries so far)")
                await asyncio.sleep(delay)
        raise EngineError(
            f"cannot reach the OpenAI-compatible server at {self.base_url} after {self.max_attempts} attempts "
            f"({self.max_attempts - 1} retries) over {time.monotonic() - t0:.1f} s: {last}"
        )

    # -- Backend ---------------------------------------------------------------------------

    def _text(self, messages: list[Message]) -> list[Any]:
        """What is sent: string contents as they are, text parts joined into one string per message
        (what the server's chat template would make of them); for a vision preset a message with
        images is a list of OpenAI parts (images as ``image_url`` data URIs), for any other an image
        part is refused (ImageInputError) before anything is sent."""
        messages = engine_messages(messages, self.engine, self.identity.preset, self.accepts_images)
        return openai_messages(messages) if self.accepts_images else messages

    def request_body(self, request: GenerationRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": self._text(request.messages),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "seed": request.seed,
        }
        if request.output is not None and self.sends_grammar:
            from localbench.serving.xgrammar_quirks import json_grammar

            body["structured_outputs"] = {"grammar": json_grammar(request.output.schema)}
        elif request.output is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": request.output.name, "schema": request.output.schema, "strict": True},
            }
        if self.chat_template_kwargs:
            body["chat_template_kwargs"] = self.chat_template_kwargs  # vLLM / SGLang extension
        return body

    async def complete(self, request: GenerationRequest) -> RawCompletion:
        data = await self._post("/chat/completions", self.request_body(request))
        try:
            choice = data["choices"][0]
            text = choice["message"].get("content") or ""
            reason = choice.get("finish_reason")
        except (KeyError, IndexError, TypeError, AttributeError) as e:
            raise EngineError(f"{self.base_url}/chat/completions returned an unexpected body: {str(data)[:300]}") from e
        usage = data.get("usage") or {}
        return RawCompletion(
            text=text,
            finish_reason=reason if reason in ("stop", "length") else "error",
            tokens_in=int(usage.get("prompt_tokens") or 0),
            tokens_out=int(usage.get("completion_tokens") or 0),
        )

    def count_tokens(self, messages: list[Message]) -> int:
        """Prompt tokens, without a round trip where possible: the run calls this from its event
        loop on every turn (and several times while cutting history), so a blocking HTTP call
        here caps every served run at about one turn per round trip.

        Counts are remembered per prompt; a prompt is counted with the preset's own tokenizer when
        it loads from local files (a tokenizer is a few MB, fetched with the weights by prefetch,
        never downloaded here); only a client without one asks the server's /tokenize."""
        key = _prompt_key(messages)
        if key in self._counts:
            return self._counts[key]
        n = self._count_locally(messages) if self._local_tokenizer_ready() else None
        if n is None:
            n = self._count_remotely(messages)
        return self._remember(key, n)

    async def acount_tokens(self, messages: list[Message]) -> int:
        """``count_tokens`` for async callers: the /tokenize fallback goes through the async client."""
        key = _prompt_key(messages)
        if key in self._counts:
            return self._counts[key]
        if self._local_tokenizer_ready():
            return self._remember(key, self._count_locally(messages))
        if self._tokenize_endpoint is not False:
            try:
                r = await self._http().post(f"{self.root_url}/tokenize", json=self._tokenize_body(messages),
                                             timeout=min(30.0, self.first_byte_timeout))
                if r.status_code == 200 and "count" in r.json():
                    self._tokenize_endpoint = True
                    return self._remember(key, int(r.json()["count"]))
                if r.status_code in (404, 405):
                    self._tokenize_endpoint = False
            except (httpx.HTTPError, ValueError):
                pass
        return self._remember(key, await asyncio.to_thread(self._count_locally, messages))

    def _remember(self, key: str, n: int) -> int:
        self._counts[key] = n
        if len(self._counts) > COUNT_MEMO:
            self._counts.pop(next(iter(self._counts)))
        return n

    def _local_tokenizer_ready(self) -> bool:
        """Whether a local tokenizer is loaded or loads now from local files alone (no download,
        no weights built): decided once."""
        if self._tokenizer is not None:
            return True
        if self._local_tokenizer is False:
            return False
        try:
            from transformers import AutoTokenizer

            location, revision = self.tokenizer_location, None
            if location is None and self.preset is not None:
                src = self.preset.source
                if src.kind == "hf-hub":
                    location, revision = src.repo, src.revision
                elif src.kind == "local":
                    location = src.path
                else:  # built or converted weights (tiny-random, GGUF): only where already built
                    from localbench.serving.weights import materialize

                    location = materialize(self.preset)
            if location is None or self.accepts_images:
                raise LookupError("no local tokenizer location (or a VLM, counted by the server's processor)")
            self._tokenizer = AutoTokenizer.from_pretrained(location, revision=revision, local_files_only=True)
            self._local_tokenizer = True
        except Exception:  # noqa: BLE001 - not cached, no transformers: the server counts
            self._local_tokenizer = False
        return bool(self._local_tokenizer)

    def _tokenize_body(self, messages: list[Message]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": self._text(messages), "add_generation_prompt": True}
        if self.chat_template_kwargs:
            body["chat_template_kwargs"] = self.chat_template_kwargs
        return body

    def _count_remotely(self, messages: list[Message]) -> int:
        """The server's /tokenize (vLLM) when it has one, else the preset's local tokenizer."""
        if self._tokenize_endpoint is not False:
            body = self._tokenize_body(messages)
            try:
                r = httpx.post(f"{self.root_url}/tokenize", json=body, headers=self._headers,
                               timeout=min(30.0, self.first_byte_timeout))
                if r.status_code == 404 and self._may_switch(body) and self._switch_model(body["model"]):
                    body["model"] = self.model
                    r = httpx.post(f"{self.root_url}/tokenize", json=body, headers=self._headers, timeout=30.0)
                if r.status_code == 200 and "count" in r.json():
                    self._tokenize_endpoint = True
                    return int(r.json()["count"])
                if r.status_code in (404, 405):
                    self._tokenize_endpoint = False
            except httpx.TimeoutException as e:
                raise ServerNotAnswering(f"{self.root_url}/tokenize sent nothing in {self.first_byte_timeout:g} s "
                                         "(first-byte limit: --first-byte-timeout or serving.first_byte_timeout_s): "
                                         "the server is hung or overloaded") from e
            except (httpx.HTTPError, ValueError):
                pass
        return self._count_locally(messages)

    def _count_locally(self, messages: list[Message]) -> int:
        from localbench.serving.vllm_engine import chat_prompt_ids

        sent = self._text(messages)  # refuses an image for a text preset before anything loads
        if self._tokenizer is None:
            try:
                from transformers import AutoProcessor, AutoTokenizer

                location, revision = self.tokenizer_location, None
                if location is None and self.preset is not None:  # the preset's weights, built only now
                    from localbench.serving.weights import hub_revision, materialize

                    location = materialize(self.preset)
                    revision = hub_revision(self.preset, location)
                self._tokenizer = AutoTokenizer.from_pretrained(location or self.model, revision=revision)
                if self.accepts_images:  # a VLM: its processor counts a prompt's image tokens
                    self._processor = AutoProcessor.from_pretrained(location or self.model, revision=revision)
            except Exception as e:  # noqa: BLE001 - missing transformers, missing files, offline hub
                raise EngineError(
                    f"cannot count tokens for {self.model}: {self.root_url}/tokenize is unavailable and no "
                    f"local tokenizer loads ({type(e).__name__}: {e})"
                ) from e
        if self.accepts_images and has_images(messages):
            from localbench.serving.vision import processor_inputs

            ids, _ = processor_inputs(self._processor, engine_messages(
                messages, self.engine, self.identity.preset, True), self.chat_template_kwargs)
            return len(ids)
        return len(chat_prompt_ids(self._tokenizer, sent, self.chat_template_kwargs))

    def describe(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "base_url": self.base_url,
            "model": self.model,
            "accepts_images": self.accepts_images,
            "structured_output": self.structured_output,
            "structured_output_backend": self.grammar_backend,
            "max_concurrency": self.max_concurrency,
            "concurrency_source": self.concurrency_source,
            "server_card": self.server_card.as_dict() if self.server_card is not None else None,
            "max_attempts": self.max_attempts,
            "timeout_s": self.timeout,
            "first_byte_timeout_s": self.first_byte_timeout,
            "chat_template_kwargs": self.chat_template_kwargs,
            "batch_invariant": None,  # the server's own setting (VLLM_BATCH_INVARIANT=1 where it was started)
        }

    @property
    def structured_output(self) -> str:
        """How structured requests are sent (recorded by describe())."""
        if self.sends_grammar:
            from localbench.serving.xgrammar_quirks import GRAMMAR_FORM

            return f"structured_outputs grammar: {GRAMMAR_FORM}"
        return "response_format json_schema (strict)"

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()
