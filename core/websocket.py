"""What every WebSocket of Skein shares (protocol in docs/streaming.md): the Host check at the
handshake, the same-origin guard of cookie-authenticated sockets, bounded JSON frames, and the
owner's consumer of one object's events (a thread's, a run's, a test run's)."""

from __future__ import annotations

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer
from django.conf import settings

from core.origins import origin_normalize
from core.text import BadJSON, parse_json

# Close codes (the 4000 range is the application's; a refused handshake is an HTTP 403 to a browser).
CLOSE_UNAUTHENTICATED = 4401
CLOSE_FORBIDDEN_ORIGIN = 4403
CLOSE_NOT_FOUND = 4404
CLOSE_NOT_PUBLISHED = 4409


def header(scope, name: bytes) -> str | None:
    """A header of a socket's handshake, or None."""
    for key, value in scope.get("headers", []):
        if key == name:
            return value.decode("latin-1")
    return None


class AllowedHostsOnly:
    """ASGI middleware for sockets: a Host header outside ALLOWED_HOSTS is refused at the handshake
    (Django checks it for HTTP; without this a rebinding DNS name could reach the sockets)."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        from django.http.request import split_domain_port, validate_host

        if scope["type"] == "websocket":
            domain, _port = split_domain_port(header(scope, b"host") or "")
            if not domain or not validate_host(domain, settings.ALLOWED_HOSTS):
                await receive()  # websocket.connect
                await send({"type": "websocket.close", "code": CLOSE_FORBIDDEN_ORIGIN})
                return
        return await self.app(scope, receive, send)


def same_origin(scope) -> bool:
    """Cross-site WebSocket hijacking guard for cookie-authenticated sockets: a browser page may
    open one only from this site (or from CSRF_TRUSTED_ORIGINS). Non-browser clients send no Origin."""
    origin = header(scope, b"origin")
    if origin is None:
        return True
    host = header(scope, b"host") or ""
    try:
        normalized = origin_normalize(origin)
    except ValueError:
        return False
    trusted = set()
    for entry in settings.CSRF_TRUSTED_ORIGINS:
        try:
            trusted.add(origin_normalize(entry))
        except ValueError:
            pass
    return normalized.split("://", 1)[1] == host.lower() or normalized in trusted


class BoundedJsonConsumer(AsyncJsonWebsocketConsumer):
    """Client frames are parsed like API bodies: bounded nesting, no NUL (``core.text``)."""

    @classmethod
    async def decode_json(cls, text_data):
        try:
            return parse_json(text_data)
        except BadJSON as exc:
            return RefusedFrame(str(exc))


class RefusedFrame(str):
    """A client frame that was not accepted: the consumer answers with an error."""


class OwnerConsumer(BoundedJsonConsumer):
    """The owner's view of a thread or a run: every event, as published (session auth)."""

    def subscription(self, user, object_id) -> str | None:
        """The group to join, or None when ``user`` has no such object."""
        raise NotImplementedError

    async def connect(self):
        user = self.scope.get("user")
        object_id = next(iter(self.scope["url_route"]["kwargs"].values()))
        if not same_origin(self.scope):
            await self.close(code=CLOSE_FORBIDDEN_ORIGIN)
            return
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        self.group = await database_sync_to_async(self.subscription)(user, object_id)
        if self.group is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()

    async def disconnect(self, code):
        if getattr(self, "group", None):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive_json(self, content, **kwargs):
        if isinstance(content, dict) and content.get("type") == "ping":
            await self.send_json({"type": "pong", "data": {}})

    async def skein_event(self, message):
        await self.send_json(message["event"])
