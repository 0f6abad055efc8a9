"""The ASGI handler: Django's, with a request's middleware and view run in one hop to a pool thread."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.db import close_old_connections


@lru_cache(maxsize=1)
def request_threads() -> ThreadPoolExecutor:
    """The threads that run requests' views (SKEIN_WEB_THREADS): reused, so each keeps its
    database connection where the settings allow it (SQLite in the embedded mode)."""
    return ThreadPoolExecutor(max_workers=settings.SKEIN_WEB_THREADS, thread_name_prefix="skein-request")


class SyncChainASGIHandler(ASGIHandler):
    """Skein's views and middleware are synchronous. Django's ASGI handler builds its middleware
    chain for async, so each middleware that can run either way (most of Django's) hands every
    ``process_request`` and ``process_response`` to a thread and back: ~16 hops of the event loop
    per request. Built for sync and entered once, a request costs one hop.

    And Django gives every request a thread of its own for the request's whole length (its
    ``ThreadSensitiveContext``), so a streamed answer (the SSE stream, ``/v1`` with ``stream``)
    kept an idle thread until its last byte. Here the chain runs in a pool thread and gives it
    back when the view returned; the stream is sent by the event loop alone. What Django does at
    a request's start and end for the database (``close_old_connections``) is done in that thread,
    around the chain: its connections are the request's. Django's request signals still run, in
    asgiref's one shared thread for code that must not run concurrently."""

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            raise ValueError(f"Django can only handle ASGI/HTTP connections, not {scope['type']}.")
        await self.handle(scope, receive, send)  # no ThreadSensitiveContext: no thread per request

    def load_middleware(self, is_async=False):
        super().load_middleware(is_async=False)
        chain = self._middleware_chain

        def in_request_thread(request):
            close_old_connections()  # a connection kept from an earlier request: checked, or dropped if stale
            try:
                return chain(request)
            finally:
                close_old_connections()  # handed back (a pool's) or kept (CONN_MAX_AGE)

        self._middleware_chain = sync_to_async(in_request_thread, thread_sensitive=False, executor=request_threads())
