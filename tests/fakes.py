"""A scripted Backend for unit tests of the logic around engines (never a stand-in for a real engine)."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from localbench.serving.types import Backend, GenerationRequest, ModelIdentity, RawCompletion


class ScriptedBackend(Backend):
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


class RecordingServer:
    """A minimal OpenAI-compatible server on a free port that records every request it gets
    (``seen``: (path, body)) and answers ``content`` with ``prompt_tokens`` counted (also /tokenize,
    after ``tokenize_delay_s``)."""

    def __init__(self, content: str, prompt_tokens: int, tokenize_delay_s: float = 0.0):
        seen = self.seen = []
        headers = self.headers = []  # each request's headers, in order

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 - http.server's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                seen.append((self.path, body))
                headers.append(dict(self.headers))
                if self.path == "/tokenize":
                    time.sleep(tokenize_delay_s)
                reply = {"count": prompt_tokens} if self.path == "/tokenize" else {
                    "choices": [{"index": 0, "finish_reason": "stop",
                                 "message": {"role": "assistant", "content": content}}],
                    "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": len(content) // 4 + 1}}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
