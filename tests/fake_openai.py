"""A tiny OpenAI-compatible HTTP server on 127.0.0.1 for tests that must never touch the network.

Answers ``POST /v1/chat/completions`` with :attr:`FakeOpenAI.reply` and ``POST /v1/embeddings`` with
deterministic vectors derived from a hash of each input; as an Ollama server (api_base
:attr:`FakeOpenAI.root`), ``/api/generate`` and ``/api/chat`` with the reply and ``/api/show`` with
a model's details. :attr:`FakeOpenAI.mode` switches it to answer
``"401"``, ``"500"`` or ``"hang"`` (sleep up to :attr:`FakeOpenAI.hang_seconds`, then close) instead,
or ``"trickle"``: a chat answer whose body comes a byte every :attr:`FakeOpenAI.trickle_seconds`
(each gap well under any read timeout, the whole far over it);
:attr:`FakeOpenAI.delay` makes every chat answer slow and :attr:`FakeOpenAI.reply_for` scripts it.
Every request is recorded in :attr:`FakeOpenAI.requests` as ``(path, headers, json_body)``, the
headers in a :class:`Headers` that, like HTTP, ignores the case of their names.

    with fake_openai(dimension=8) as server:
        server.reply = "hello"
        ... api_base=server.url ...
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np

from memtree_mcp.config import Settings


def fake_vector(text: str, dimension: int) -> list[float]:
    """The (unnormalised) vector the fake server returns for ``text``: deterministic, from its sha256."""
    seed = int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "little")
    rng = np.random.default_rng(seed)
    # Scale by a text-dependent factor so clients really have to normalise.
    return [float(x) for x in rng.standard_normal(dimension) * (1.0 + len(text) % 7)]


class Headers(Mapping[str, str]):
    """A request's headers as received, looked up without regard to case (RFC 9110, section 5.1):
    ``headers["Authorization"]`` finds what a client sent as ``authorization``."""

    def __init__(self, items: Iterable[tuple[str, str]]) -> None:
        self._items = list(items)
        self._by_name = {name.lower(): value for name, value in self._items}

    def __getitem__(self, name: str) -> str:
        return self._by_name[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Headers({self._items!r})"


@dataclass
class FakeOpenAI:
    url: str = ""
    reply: str = "scripted reply"
    mode: str = "ok"  # "ok" | "401" | "500" | "hang" | "trickle"
    dimension: int = 8
    hang_seconds: float = 5.0
    trickle_seconds: float = 0.2
    # Seconds each chat answer takes (a slow model), and an optional function of the request body
    # that replaces ``reply`` (scripted answers that depend on the prompt).
    delay: float = 0.0
    reply_for: Callable[[Any], str] | None = None
    requests: list[tuple[str, Headers, Any]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)

    def paths(self) -> list[str]:
        return [path for path, _, _ in self.requests]

    @property
    def root(self) -> str:
        """The server without ``/v1``: where an Ollama client is pointed."""
        return self.url.removesuffix("/v1")


OLLAMA_USAGE = {"prompt_eval_count": 10, "eval_count": 5}


def _chat_answer(state: FakeOpenAI, body: Any) -> dict[str, Any]:
    """The chat-completions answer to ``body``: :attr:`FakeOpenAI.reply` or what ``reply_for`` says."""
    content = state.reply_for(body) if state.reply_for is not None else state.reply
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": (body or {}).get("model", "fake-model"),
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _handler(state: FakeOpenAI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _trickle(self, body: Any) -> None:
            data = json.dumps(_chat_answer(state, body)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            for byte in data:
                if state.stop.wait(state.trickle_seconds):
                    break
                try:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                except OSError:  # the client gave up
                    break
            self.close_connection = True

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            try:
                body = json.loads(raw) if raw else None
            except ValueError:
                body = None
            path = self.path.split("?", 1)[0]
            state.requests.append((path, Headers(self.headers.items()), body))

            mode = state.mode
            if mode == "hang":
                state.stop.wait(state.hang_seconds)
                self.close_connection = True
                return
            if mode == "trickle":
                self._trickle(body)
                return
            if mode == "401":
                self._send(
                    401,
                    {
                        "error": {
                            "message": "Incorrect API key provided",
                            "type": "invalid_request_error",
                            "code": "invalid_api_key",
                        }
                    },
                )
                return
            if mode == "500":
                self._send(500, {"error": {"message": "internal server error", "type": "server_error"}})
                return

            model = (body or {}).get("model", "fake-model")
            if path.endswith("/chat/completions"):
                if state.delay:
                    state.stop.wait(state.delay)
                self._send(200, _chat_answer(state, body))
            elif path.endswith("/embeddings"):
                inputs = (body or {}).get("input", [])
                if isinstance(inputs, str):
                    inputs = [inputs]
                data = [
                    {"object": "embedding", "index": i, "embedding": fake_vector(str(t), state.dimension)}
                    for i, t in enumerate(inputs)
                ]
                self._send(
                    200,
                    {
                        "object": "list",
                        "data": data,
                        "model": model,
                        "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)},
                    },
                )
            # Ollama's own API, at the server's root (api_base without /v1).
            elif path == "/api/generate":
                self._send(200, {"model": model, "response": state.reply, "done": True, **OLLAMA_USAGE})
            elif path == "/api/chat":
                message = {"role": "assistant", "content": state.reply}
                self._send(200, {"model": model, "message": message, "done": True, **OLLAMA_USAGE})
            elif path == "/api/show":
                self._send(200, {"model_info": {"llama.context_length": 8192}, "template": "", "details": {}})
            else:
                self._send(404, {"error": {"message": f"no route {path}", "type": "not_found"}})

    return Handler


@contextmanager
def fake_openai(*, reply: str = "scripted reply", dimension: int = 8) -> Iterator[FakeOpenAI]:
    """Run the fake server on a free port of 127.0.0.1 for the duration of the ``with`` block."""
    state = FakeOpenAI(reply=reply, dimension=dimension)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    server.daemon_threads = True
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, name="fake-openai", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.stop.set()  # release hanging handlers
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def llm_settings(tmp_path: Path, server: FakeOpenAI) -> Settings:
    """Settings of a store under ``tmp_path`` whose LLM is ``server`` (no retries, a 20 s timeout)."""
    return Settings(
        home=str(tmp_path / "store"),
        llm="litellm:openai/fake-model",
        llm_api_base=server.url,
        llm_api_key="sk-test",
        llm_timeout=20,
        llm_retries=0,
    )
