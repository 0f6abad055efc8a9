"""The official ``openai`` client talking to Skein's real ASGI application in this process.

``ASGITransport`` is a synchronous httpx transport that hands each request to ``config.asgi``
(the same application daphne serves), so ``openai.OpenAI`` runs unchanged: its request building,
its response and error parsing, its SSE decoder. Full-stack tests use it over real HTTP instead.
"""

from __future__ import annotations

import httpx
import openai
import pytest
from asgiref.sync import async_to_sync

BASE_URL = "http://testserver/v1"


class ASGITransport(httpx.BaseTransport):
    def __init__(self):
        from config.asgi import application

        self._transport = httpx.ASGITransport(app=application, client=("10.0.0.9", 50000))

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        async def call():
            response = await self._transport.handle_async_request(request)
            return response.status_code, response.headers, await response.aread()

        status, headers, body = async_to_sync(call)()
        headers = httpx.Headers([(k, v) for k, v in headers.multi_items() if k.lower() != "content-encoding"])
        return httpx.Response(status, headers=headers, content=body, request=request)


def http_client() -> httpx.Client:
    return httpx.Client(transport=ASGITransport(), base_url="http://testserver", timeout=60)


def client_for(key: str, **options) -> openai.OpenAI:
    options.setdefault("max_retries", 0)
    return openai.OpenAI(api_key=key, base_url=BASE_URL, http_client=httpx.Client(transport=ASGITransport(), timeout=60), **options)


@pytest.fixture
def api_token(user):
    from rest_framework.authtoken.models import Token

    return Token.objects.get_or_create(user=user)[0].key


@pytest.fixture
def oai(api_token):
    """alice's ``openai.OpenAI`` client."""
    return client_for(api_token)


@pytest.fixture
def raw(api_token):
    """An httpx client onto the app with alice's bearer token, for what the SDK would not send."""
    with http_client() as client:
        client.headers["Authorization"] = f"Bearer {api_token}"
        yield client
