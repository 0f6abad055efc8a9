"""A fake OpenAI-compatible model server for tests (stdlib only).

litellm talks to it over real HTTP (``api_base``), streaming included, so the whole client path is
exercised. It records every request, so tests assert exactly what a model was sent. Behaviour is
chosen per request by a ``responder`` (request -> Reply); the default echoes the last user message.
Runs in a thread of the test process; worker processes reach it over loopback.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable


@dataclass
class Reply:
    text: str = ""
    status: int = 200
    delay: float = 0.0  # seconds before the first byte
    token_delay: float = 0.0  # seconds between streamed chunks
    hang: float = 0.0  # seconds to stall after the headers (a model that hangs mid-answer)
    prompt_tokens: int = 11
    completion_tokens: int | None = None
    finish_reason: str = "stop"  # "length": the answer was cut at max_tokens
    usage: bool = True  # False: no usage chunk even when asked (a server that ignores stream_options)
    # Calls of tools the model asks for: [{"id", "name", "arguments": dict or JSON text}]; the
    # answer then ends with finish_reason "tool_calls" (the text, if any, comes first).
    tool_calls: list[dict] = field(default_factory=list)


def calls(*specs: tuple[str, dict | str], prefix: str = "call") -> list[dict]:
    """Tool calls for a ``Reply``: ``calls(("lookup", {"id": 1}), ...)``, with ids call_1, call_2..."""
    return [{"id": f"{prefix}_{i}", "name": name, "arguments": arguments} for i, (name, arguments) in enumerate(specs, start=1)]


@dataclass
class Request:
    model: str
    messages: list[dict]
    stream: bool
    body: dict
    received: float = field(default_factory=time.monotonic)

    @property
    def last_user(self) -> str:
        users = [m["content"] for m in self.messages if m.get("role") == "user"]
        return users[-1] if users else ""

    @property
    def tools(self) -> list[str]:
        """The names of the functions the model was offered."""
        return [tool["function"]["name"] for tool in self.body.get("tools") or []]

    @property
    def tool_results(self) -> list[dict]:
        return [m for m in self.messages if m.get("role") == "tool"]


def echo(request: Request) -> Reply:
    return Reply(text=f"echo: {request.last_user}")


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024  # hundreds of clients connect at once in the throughput benchmark (the default is 5)


class FakeLLM:
    def __init__(self):
        self.requests: list[Request] = []
        self.responder: Callable[[Request], Reply] = echo
        # GET requests (model lists): path -> (status, content type, body), or None for the default
        self.get_responder: Callable[[str], tuple[int, str, bytes] | None] = lambda path: None
        self._lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self.connections_opened = 0  # TCP connections accepted since start: clients that reuse theirs open few
        self._server = _Server(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self.port = self._server.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def start(self) -> FakeLLM:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        with self._lock:  # kept-alive connections too: a stopped server answers no one
            open_connections, self._connections = list(self._connections), set()
        for sock in open_connections:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
        self.responder = echo
        self.get_responder = lambda path: None

    def requests_for(self, model: str) -> list[Request]:
        with self._lock:
            return [r for r in self.requests if r.model == model]

    def _record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)

    def _handler_class(self):
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # TCP_NODELAY: headers and body go out in separate writes; with Nagle's algorithm on,
            # the body would wait for the client's delayed ACK (~40 ms) on every answer.
            disable_nagle_algorithm = True

            def log_message(self, *args):  # keep test output clean
                pass

            def setup(self):
                super().setup()
                with fake._lock:
                    fake._connections.add(self.connection)
                    fake.connections_opened += 1

            def finish(self):
                with fake._lock:
                    fake._connections.discard(self.connection)
                super().finish()

            def do_GET(self):
                custom = fake.get_responder(self.path)
                if custom is not None:
                    status, content_type, body = custom
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                elif self.path.rstrip("/").endswith("/models"):
                    self._json(200, {"object": "list", "data": [{"id": "fake", "object": "model"}]})
                elif self.path.rstrip("/").endswith("/api/tags"):  # Ollama's model list
                    self._json(200, {"models": [{"name": "llama3.2:latest"}, {"name": "qwen2.5:0.5b"}]})
                else:
                    self._json(404, {"error": {"message": "not found"}})

            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                request = Request(
                    model=body.get("model", ""), messages=body.get("messages", []), stream=bool(body.get("stream")), body=body
                )
                fake._record(request)
                reply = fake.responder(request)
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.status != 200:
                    self._json(reply.status, {"error": {"message": reply.text or "fake failure", "type": "server_error"}})
                    return
                if request.stream:
                    self._stream(request, reply)
                else:
                    self._complete(request, reply)

            def _json(self, status: int, payload: dict):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _usage(self, reply: Reply) -> dict:
                completion = reply.completion_tokens if reply.completion_tokens is not None else max(1, len(reply.text.split()))
                return {
                    "prompt_tokens": reply.prompt_tokens,
                    "completion_tokens": completion,
                    "total_tokens": reply.prompt_tokens + completion,
                }

            def _complete(self, request: Request, reply: Reply):
                if reply.hang:
                    time.sleep(reply.hang)
                self._json(
                    200,
                    {
                        "id": "chatcmpl-fake",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": request.model,
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": reply.text}
                                | ({"tool_calls": [_call(c) for c in reply.tool_calls]} if reply.tool_calls else {}),
                                "finish_reason": "tool_calls" if reply.tool_calls else reply.finish_reason,
                            }
                        ],
                        "usage": self._usage(reply),
                    },
                )

            def _stream(self, request: Request, reply: Reply):
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                # Chunked, and the connection kept alive afterwards, as a provider's API does: a
                # client that reuses its connections is measured doing so.
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()

                def write(data: bytes):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()

                def send(payload):
                    write(b"data: " + json.dumps(payload).encode() + b"\n\n")

                base = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": int(time.time()), "model": request.model}
                try:
                    if reply.hang:
                        time.sleep(reply.hang)
                    pieces = _pieces(reply.text)
                    for index, piece in enumerate(pieces):
                        if index and reply.token_delay:
                            time.sleep(reply.token_delay)
                        delta = {"content": piece} if index else {"role": "assistant", "content": piece}
                        send({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
                    for index, call in enumerate(reply.tool_calls):  # each call in two pieces, as providers stream them
                        full = _call(call)
                        arguments = full["function"]["arguments"]
                        half = len(arguments) // 2
                        first = {**full, "index": index, "function": {"name": full["function"]["name"], "arguments": arguments[:half]}}
                        rest = {"index": index, "function": {"arguments": arguments[half:]}}
                        for piece in (first, rest):
                            send({**base, "choices": [{"index": 0, "delta": {"tool_calls": [piece]}, "finish_reason": None}]})
                    finish = "tool_calls" if reply.tool_calls else reply.finish_reason
                    send({**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
                    if reply.usage and (request.body.get("stream_options") or {}).get("include_usage"):
                        send({**base, "choices": [], "usage": self._usage(reply)})
                    write(b"data: [DONE]\n\n")
                    self.wfile.write(b"0\r\n\r\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    self.close_connection = True

        return Handler


def _call(call: dict) -> dict:
    arguments = call["arguments"] if isinstance(call["arguments"], str) else json.dumps(call["arguments"])
    return {"id": call["id"], "type": "function", "function": {"name": call["name"], "arguments": arguments}}


def _pieces(text: str) -> list[str]:
    """Split like a tokenizer would, roughly: words with their leading space."""
    if not text:
        return [""]
    words = text.split(" ")
    return [words[0]] + [" " + w for w in words[1:]]
