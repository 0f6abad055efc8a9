"""A URLconf for tests/test_asgi_handler.py: a view whose streamed answer stays open until told."""

from __future__ import annotations

import asyncio

from django.http import StreamingHttpResponse
from django.urls import path

OPEN_STREAMS: dict[str, asyncio.Event] = {}


def held_stream(request, name: str):
    release = OPEN_STREAMS.setdefault(name, asyncio.Event())

    async def body():
        yield b"open\n"
        await release.wait()
        yield b"closed\n"

    return StreamingHttpResponse(body(), content_type="text/plain")


urlpatterns = [path("held/<str:name>/", held_stream)]
