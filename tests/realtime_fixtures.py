"""Helpers and fixtures for the realtime and widget tests (import what you use into a test module).

Consumer tests run the real ASGI application (``config.asgi``) through Channels'
``WebsocketCommunicator``; stack tests run real daphne and Celery processes against the test
database, with Redis between them (processes: tests/stack.py).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from channels.testing import WebsocketCommunicator

WIDGET_JS = Path(__file__).resolve().parent.parent / "frontend" / "widget" / "dist" / "skein-widget.js"
SITE = "http://site.test"  # the embedding page's origin in consumer tests


# --- consumers ----------------------------------------------------------------------------------
def communicator(path: str, *, origin: str | None = SITE, cookie: str | None = None, client: str = "10.0.0.1"):
    from config.asgi import application

    headers = [(b"host", b"testserver")]
    if origin:
        headers.append((b"origin", origin.encode()))
    if cookie:
        headers.append((b"cookie", cookie.encode()))
    comm = WebsocketCommunicator(application, path, headers=headers)
    comm.scope["client"] = (client, 50000)
    return comm


async def receive_until(comm, stop, *, timeout: float = 15.0) -> list[dict]:
    """Messages until ``stop(message)`` is true (that one included), within ``timeout`` seconds."""
    received = []
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        remaining = deadline - asyncio.get_running_loop().time()
        if remaining <= 0:
            raise AssertionError(f"timed out; received {received}")
        message = await comm.receive_json_from(timeout=remaining)
        received.append(message)
        if stop(message):
            return received


def is_type(*types):
    return lambda message: message["type"] in types


def session_cookie(user) -> str:
    from django.test import Client

    client = Client()
    client.force_login(user)
    return f"sessionid={client.cookies['sessionid'].value}"


@pytest.fixture
def published(api, chatbot):
    """The chatbot, published: ``{"workflow": ..., "key": <public key>}``."""
    response = api.post(f"/api/workflows/{chatbot['id']}/publish/")
    assert response.status_code == 201, response.content
    settings = api.get(f"/api/workflows/{chatbot['id']}/widget/").json()
    return {"workflow": chatbot, "key": settings["public_key"]}


@pytest.fixture(autouse=True)
def _fresh_rate_limits():
    from widget import ratelimits

    ratelimits.rate_limit_reset()
    yield
    ratelimits.rate_limit_reset()


def tokens_of(messages: list[dict], run: int | None = None) -> list[str]:
    return [m["data"]["text"] for m in messages if m["type"] == "llm.token" and (run is None or m["data"]["run"] == run)]
