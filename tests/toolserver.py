"""An HTTP API for tools to call in tests (stdlib only): JSON answers by path, with the requests it
received recorded (headers and bodies), so tests assert exactly what a tool sent.

- ``/orders/<id>``: ``{"order": <id>, "status": "shipped", "carrier": {"name": "Posta"}}``
- ``/echo``: the request's method, headers and body, as JSON (a server that echoes a secret)
- ``/fail``: HTTP 500; ``/slow?s=N``: answers after N seconds; ``/big?mb=N``: N MB of JSON
- ``/text``: plain text; ``/redirect?to=URL``: 302 to URL
- ``/held/<any of the above>``: answers as that path once the test sets ``released`` (set unless
  the test clears it), so a test can watch a call while it runs

``mcp_server()`` serves a real MCP server (the official SDK, Streamable HTTP) that wants a bearer
token: ``lookup_order`` answers, ``cancel_order`` fails.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit


class ToolServer:
    def __init__(self):
        self.requests: list[dict] = []
        self.released = threading.Event()
        self.released.set()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self._server.server_address[1]}"
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
        self.released.set()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _answer(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length).decode() if length else ""
                parts = urlsplit(self.path)
                query = {k: v[0] for k, v in parse_qs(parts.query).items()}
                seen = {"method": self.command, "path": parts.path, "query": query, "headers": dict(self.headers), "body": body}
                with server._lock:
                    server.requests.append(seen)
                path = parts.path
                if path.startswith("/held/"):
                    server.released.wait(60)
                    path = path.removeprefix("/held")
                if path.startswith("/orders/"):
                    order = path.rsplit("/", 1)[1]
                    return self._json(200, {"order": order, "status": "shipped", "carrier": {"name": "Posta"}})
                if path == "/echo":
                    return self._json(200, seen)
                if path == "/fail":
                    return self._json(500, {"error": "the order service is down"})
                if path == "/slow":
                    time.sleep(float(query.get("s", "5")))
                    return self._json(200, {"slow": True})
                if path == "/big":
                    filler = "x" * 1_000_000
                    return self._json(200, {"items": [filler] * int(query.get("mb", "5"))})
                if path == "/text":
                    return self._send(200, "text/plain", b"plain words")
                if path == "/redirect":
                    self.send_response(302)
                    self.send_header("Location", query["to"])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                return self._json(404, {"error": "no such path"})

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

            def _json(self, status, payload):
                return self._send(status, "application/json", json.dumps(payload).encode())

            def _send(self, status, content_type, data: bytes):
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        return Handler


MCP_TOKEN = "Bearer mcp-secret"  # the Authorization header mcp_server() wants


@contextmanager
def mcp_server() -> Iterator[str]:
    """The URL of a real MCP server, served in a thread while the block runs."""
    import uvicorn
    from mcp.server.mcpserver import MCPServer
    from starlette.responses import JSONResponse

    server = MCPServer("orders")

    @server.tool()
    def lookup_order(order_id: int) -> str:
        """Look up an order by its number."""
        return f"order {order_id}: shipped with Posta"

    @server.tool()
    def cancel_order(order_id: int) -> str:
        """Cancel an order."""
        raise ValueError(f"order {order_id} cannot be cancelled any more")

    inner = server.streamable_http_app()

    async def app(scope, receive, send):
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != MCP_TOKEN.encode():
            return await JSONResponse({"error": "unauthorized"}, status_code=401)(scope, receive, send)
        return await inner(scope, receive, send)

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    runner = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=runner.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not runner.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        runner.should_exit = True
        thread.join(timeout=10)
