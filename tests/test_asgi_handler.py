"""Skein's ASGI handler (config/handlers.py): a request's middleware and view in one hop to a pool
thread, and no thread held while an answer streams.

Django's handler builds its middleware chain for async, so each middleware that can run either way
hands its ``process_request`` and ``process_response`` to a thread and back, and it gives every
request a thread for the request's whole length, a streamed answer's included. The tests fail if a
change brings either back."""

from __future__ import annotations

import threading

import pytest
from asgiref import sync
from asgiref.testing import ApplicationCommunicator
from django.core.handlers.asgi import ASGIHandler

from config.handlers import SyncChainASGIHandler
from tests import streaming_urls

pytestmark = pytest.mark.django_db(transaction=True)


def _scope(path: str) -> dict:
    return {
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


async def _get(application, path: str) -> tuple[int, dict]:
    communicator = ApplicationCommunicator(application, _scope(path))
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
    print(f"thread hops per request: Django {stock}, Skein {ours}")
    assert status == stock_status == 200
    # The middleware still ran: the same security headers and cookies as Django's own handler.
    for header in ("content-security-policy", "x-frame-options", "x-content-type-options", "referrer-policy"):
        assert headers.get(header) == stock_headers.get(header), header
    assert "csrftoken=" in headers["set-cookie"] and "csrftoken=" in stock_headers["set-cookie"]
    assert ours <= 4, ours
    assert stock > 2 * ours  # what the handler saves


STREAMS = 20


def _threads_while_streams_are_open(application, tag: str) -> int:
    """Threads added while STREAMS answers are streaming (each sent its first part, none ended),
    opened one after the other."""

    async def scenario() -> int:
        before = threading.active_count()
        communicators = []
        for index in range(STREAMS):  # one after the other: each view has returned when the next comes
            communicator = ApplicationCommunicator(application, _scope(f"/held/{tag}{index}/"))
            await communicator.send_input({"type": "http.request", "body": b"", "more_body": False})
            communicators.append(communicator)
            start = await communicator.receive_output(timeout=10)
            assert start["status"] == 200, start
            assert (await communicator.receive_output(timeout=10))["body"] == b"open\n"
        added = threading.active_count() - before
        for index in range(STREAMS):
            streaming_urls.OPEN_STREAMS[f"{tag}{index}"].set()
        for communicator in communicators:
            assert (await communicator.receive_output(timeout=10))["body"] == b"closed\n"
            await communicator.wait(timeout=10)
        return added

    return sync.async_to_sync(scenario)()


@pytest.mark.urls("tests.streaming_urls")
def test_a_streamed_answer_holds_no_thread(settings):
    settings.ALLOWED_HOSTS = ["localhost"]
    streaming_urls.OPEN_STREAMS.clear()
    stock = _threads_while_streams_are_open(ASGIHandler(), "stock")
    ours = _threads_while_streams_are_open(SyncChainASGIHandler(), "ours")
    print(f"threads added while {STREAMS} answers stream: Django {stock}, Skein {ours}")
    assert stock >= STREAMS  # Django's: one per open stream
    assert ours <= 2  # Skein's: the pool thread that ran the views (and asgiref's shared one), none per stream
