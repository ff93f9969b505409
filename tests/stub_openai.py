"""A stub OpenAI-compatible chat server on loopback that imitates what real providers do.

Tests drive it through the real ``openai``/``langchain-openai`` client. Each model name
the test registers has a *mode* (how the provider behaves) and scripted answers:

- ``full``: OpenAI itself: tools, a forced named ``tool_choice``, ``json_schema`` and JSON
  mode all work;
- ``no_json_schema``: 400 on ``response_format`` of type ``json_schema``;
- ``no_named_tool_choice``: 400 on a ``tool_choice`` that names a function;
- ``ignore_tool_choice``: accepts tools but ignores them and ``tool_choice``, answering in
  prose (like Ollama with many models); response formats work;
- ``no_tools``: 400 on any request with tools or a ``response_format``: plain chat only;
- ``tools_as_text``: like llama.cpp's server with a model whose tool-call format it does not
  parse (Qwen2.5-Coder): a forced tool is answered with the call written as text
  (``<tools>{"name": …, "arguments": …}</tools>``), and a ``reply`` that writes a call
  comes back as text too; ``json_schema`` works;
- ``runaway``: like a small model at temperature 0 that starts repeating itself: a
  ``json_schema`` answer is cut at ``max_tokens`` (``finish_reason`` "length"); the other
  mechanisms answer;
- ``bad_key``: 401, echoing the key it was sent (as OpenAI does, partly);
- ``slow``: holds every answer until the test releases :attr:`StubOpenAI.release`.

``POST /v1/embeddings`` answers for any model name: hashed words and character bigrams,
unit length, with the ``dimensions`` asked for (384 when none is), so texts that share
words are close, as a served embedder's would be.

A model name nobody registered answers 404 ``model_not_found``; :meth:`StubOpenAI.stop`
closes the port, so requests get a connection refused, and :meth:`StubOpenAI.start`
listens on the same port again.

The stub never reads the prompt's wording: a structured request (a named tool, a
``response_format``, or the assistant's JSON instruction for plain text, found by its
first words in :data:`assistant.inference.providers.JSON_INSTRUCTION`) gets the registered
``structured`` answer; anything else gets ``reply``. ``structured`` may be a function of
the request body, for a model that answers each request differently (one that extracts
whatever it is asked to, say).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from assistant.inference.providers import JSON_INSTRUCTION
from helpers import hashed_vector

MODES = (
    "full",
    "no_json_schema",
    "no_named_tool_choice",
    "ignore_tool_choice",
    "no_tools",
    "tools_as_text",
    "runaway",
    "bad_key",
    "slow",
)

_INSTRUCTION_START = JSON_INSTRUCTION.split(":", 1)[0]


@dataclass
class StubModel:
    """How one registered model name behaves."""

    mode: str
    reply: str = "Hello from the stub."
    structured: dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]] = field(
        default_factory=lambda: {"operations": []}
    )

    def structured_json(self, body: dict[str, Any]) -> str:
        """The structured answer to a structured request ``body``, as JSON."""
        answer = self.structured(body) if callable(self.structured) else self.structured
        return json.dumps(answer, ensure_ascii=False)


@dataclass
class StubOpenAI:
    """The stub server: ``start()``, register models, read ``requests``, ``stop()``."""

    port: int = 0
    models: dict[str, StubModel] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    """Every chat request body, with ``_status`` (the HTTP status answered) added."""
    release: threading.Event = field(default_factory=threading.Event)
    """Set it to let ``slow`` models answer."""
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        """What OPENAI_BASE_URL should be."""
        return f"http://127.0.0.1:{self.port}/v1"

    def add(self, name: str, mode: str, **answers: Any) -> str:
        """Register model ``name`` with ``mode`` (see the module doc) and return the name."""
        if mode not in MODES:
            raise ValueError(f"unknown stub mode {mode!r}; expected one of {MODES}")
        self.models[name] = StubModel(mode=mode, **answers)
        return name

    def calls(self, model: str) -> list[dict[str, Any]]:
        """The requests made for ``model``, oldest first."""
        with self._lock:
            return [r for r in self.requests if r.get("model") == model]

    def start(self) -> StubOpenAI:
        """Listen on ``port`` (a free one the first time)."""
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.endswith("/embeddings"):
                    with stub._lock:
                        stub.requests.append({**body, "_status": 200})
                    self.close_connection = True  # the client keeps no connection open
                    self._send_json(200, _embeddings(body), close=True)
                    return
                status, payload = stub.answer(body, self.headers.get("authorization", ""))
                with stub._lock:
                    stub.requests.append({**body, "_status": status})
                if status == 200 and body.get("stream"):
                    self._send_stream(body, payload)
                else:
                    self._send_json(status, payload)

            def _send_json(
                self, status: int, payload: dict[str, Any], *, close: bool = False
            ) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                if close:
                    self.send_header("connection", "close")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _send_stream(self, body: dict[str, Any], payload: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("connection", "close")
                self.end_headers()
                for chunk in _chunks(payload):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()
                self.close_connection = True

        self._server = _QuietServer(("127.0.0.1", self.port), Handler)
        self._server.daemon_threads = True
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Close the port: requests now get a connection refused."""
        self.release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    # ------------------------------------------------------------------ behaviour

    def answer(self, body: dict[str, Any], authorization: str) -> tuple[int, dict[str, Any]]:
        """The status and JSON body a provider in the model's mode would answer."""
        name = str(body.get("model", ""))
        model = self.models.get(name)
        if model is None:
            return 404, _error(
                f"The model `{name}` does not exist or you do not have access to it.",
                "model_not_found",
            )
        mode = model.mode
        if mode == "bad_key":
            key = authorization.removeprefix("Bearer ").strip()
            return 401, _error(f"Incorrect API key provided: {key}.", "invalid_api_key")
        if mode == "slow":
            self.release.wait(timeout=120)
        tools = body.get("tools") or []
        tool_choice = body.get("tool_choice")
        response_format = body.get("response_format") or {}
        named = isinstance(tool_choice, dict)
        if mode == "no_json_schema" and response_format.get("type") == "json_schema":
            return 400, _error("response_format json_schema is not supported", "invalid_request")
        if mode == "no_named_tool_choice" and named:
            return 400, _error(
                "tool_choice must be 'auto' or 'none' for this model", "invalid_request"
            )
        if mode == "no_tools" and (tools or response_format):
            field_name = "tools" if tools else "response_format"
            return 400, _error(f"{field_name} is not supported by this model", "invalid_request")
        if named and mode == "tools_as_text":
            function = (tool_choice or {}).get("function", {}).get("name", "")
            call = f'{{"name": "{function}", "arguments": {model.structured_json(body)}}}'
            return 200, _completion(name, content=f"<tools>\n{call}\n</tools>")
        if named and mode != "ignore_tool_choice":
            function = (tool_choice or {}).get("function", {}).get("name", "")
            return 200, _completion(name, tool_call=(function, model.structured_json(body)))
        if named:
            return 200, _completion(name, content="Noted! I will keep that in mind.")
        if mode == "runaway" and response_format.get("type") == "json_schema":
            cut = _completion(name, content='{"user_says": "I I I I I I I I')
            cut["choices"][0]["finish_reason"] = "length"
            return 200, cut
        if response_format.get("type") in ("json_schema", "json_object"):
            return 200, _completion(name, content=model.structured_json(body))
        last = _last_user_text(body.get("messages") or [])
        if _INSTRUCTION_START in last:
            fenced = f"Here you go:\n```json\n{model.structured_json(body)}\n```"
            return 200, _completion(name, content=fenced)
        return 200, _completion(name, content=model.reply)


class _QuietServer(ThreadingHTTPServer):
    """No tracebacks when a client hangs up first (a timed-out client of a slow model)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


def _embeddings(body: dict[str, Any]) -> dict[str, Any]:
    """An embeddings response for ``body``'s input (a text or a list of texts)."""
    texts = body.get("input")
    texts = [texts] if isinstance(texts, str) else list(texts or [])
    dims = int(body.get("dimensions") or 384)
    data = [
        {"object": "embedding", "index": i, "embedding": hashed_vector(str(text), dims)}
        for i, text in enumerate(texts)
    ]
    return {"object": "list", "data": data, "model": body.get("model", ""), "usage": {}}


def _error(message: str, code: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": code}}


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return " ".join(str(part.get("text", "")) for part in content)
            return str(content or "")
    return ""


def _completion(
    model: str, *, content: str | None = None, tool_call: tuple[str, str] | None = None
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_call is not None:
        message["tool_calls"] = [
            {
                "id": f"call_{uuid.uuid4().hex[:12]}",
                "type": "function",
                "function": {"name": tool_call[0], "arguments": tool_call[1]},
            }
        ]
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if tool_call else "stop",
                "logprobs": None,
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _chunks(completion: dict[str, Any]) -> list[dict[str, Any]]:
    """The completion as streamed chunks: role, content in pieces (or the tool call), stop."""
    choice = completion["choices"][0]
    message = choice["message"]
    base = {k: completion[k] for k in ("id", "created", "model")}
    base["object"] = "chat.completion.chunk"

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    chunks = [chunk({"role": "assistant", "content": ""})]
    for call in message.get("tool_calls") or []:
        chunks.append(chunk({"tool_calls": [{"index": 0, **call}]}))
    text = message.get("content") or ""
    for start in range(0, len(text), 8):
        chunks.append(chunk({"content": text[start : start + 8]}))
    chunks.append(chunk({}, choice["finish_reason"]))
    return chunks
