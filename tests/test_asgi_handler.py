"""Skein's ASGI handler runs a request's middleware and view in one hop to a thread.

Django's handler builds its middleware chain for async, so each middleware that can run either way
hands its ``process_request`` and ``process_response`` to a thread and back; the test fails if a
change brings those hops back (each costs CPU on every request, config/handlers.py)."""

from __future__ import annotations

import pytest
from asgiref import sync
from asgiref.testing import ApplicationCommunicator
from django.core.handlers.asgi import ASGIHandler

from config.handlers import SyncChainASGIHandler

pytestmark = pytest.mark.django_db(transaction=True)


async def _get(application, path: str) -> tuple[int, dict]:
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [(b"host", b"localhost")],
        "client": ("127.0.0.1", 5000),
        "server": ("localhost", 80),
    }
    communicator = ApplicationCommunicator(application, scope)
    await communicator.send_input({"type": "http.request", "body": b"", "more_body": False})
    start = await communicator.receive_output(timeout=10)
    await communicator.receive_output(timeout=10)  # the body
    return start["status"], {name.decode().lower(): value.decode() for name, value in start["headers"]}


def _hops_per_request(monkeypatch, application) -> tuple[int, int, dict]:
    calls = []
    original = sync.SyncToAsync.__call__

    async def counted(self, *args, **kwargs):
        calls.append(getattr(self.func, "__qualname__", repr(self.func)))
        return await original(self, *args, **kwargs)

    monkeypatch.setattr(sync.SyncToAsync, "__call__", counted)
    status, headers = sync.async_to_sync(_get)(application, "/api/auth/csrf/")
    monkeypatch.setattr(sync.SyncToAsync, "__call__", original)
    return len(calls), status, headers


def test_a_request_costs_a_few_thread_hops_not_two_per_middleware(monkeypatch, settings):
    settings.ALLOWED_HOSTS = ["localhost"]
    stock, stock_status, stock_headers = _hops_per_request(monkeypatch, ASGIHandler())
    ours, status, headers = _hops_per_request(monkeypatch, SyncChainASGIHandler())
    assert status == stock_status == 200
    # The middleware still ran: the same security headers and cookies as Django's own handler.
    for header in ("content-security-policy", "x-frame-options", "x-content-type-options", "referrer-policy"):
        assert headers.get(header) == stock_headers.get(header), header
    assert "csrftoken=" in headers["set-cookie"] and "csrftoken=" in stock_headers["set-cookie"]
    print(f"thread hops per request: Django {stock}, Skein {ours}")
    assert ours <= 4, ours
    assert stock > 2 * ours  # what the handler saves
