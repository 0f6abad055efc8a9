"""The ASGI handler: Django's, with a request's middleware and view run in one thread hop."""

from __future__ import annotations

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIHandler


class SyncChainASGIHandler(ASGIHandler):
    """Skein's views and middleware are synchronous. Django's ASGI handler builds its middleware
    chain for async, so each middleware that can run either way (most of Django's) hands every
    ``process_request`` and ``process_response`` to a thread and back: ~16 hops of the event loop
    per request. Built for sync and entered once through ``sync_to_async``, a request costs one
    hop; an async view still works (Django runs it with ``async_to_sync``), and streaming bodies
    are still sent by the event loop."""

    def load_middleware(self, is_async=False):
        super().load_middleware(is_async=False)
        self._middleware_chain = sync_to_async(self._middleware_chain, thread_sensitive=True)
