"""Token buckets for widget messages: per public key and visitor (``SKEIN_WIDGET_BURST`` at once,
refilled at ``SKEIN_WIDGET_RATE_PER_MINUTE``), and per key for all its visitors together
(``SKEIN_WIDGET_KEY_RATE_PER_MINUTE``). The buckets are the mode's (``core.backends``): shared
through Redis in the full mode (every web process sees one bucket), the process's in the embedded
mode, which is one process."""

from __future__ import annotations

import time

from django.conf import settings

from core.backends import backend


class RateLimited(Exception):
    """The bucket is empty: one more message in ``wait`` seconds."""

    code = "rate_limited"

    def __init__(self, wait: float):
        super().__init__(f"Too many messages; try again in {max(1, round(wait))} s.")
        self.message = str(self)
        self.wait = wait


def rate_limit_take(*, public_key: str, client: str) -> None:
    """Take one message from the (key, client) token bucket and one from the key's own budget
    (all its visitors together, ``SKEIN_WIDGET_KEY_RATE_PER_MINUTE``), or raise ``RateLimited``."""
    burst, per_minute = float(settings.SKEIN_WIDGET_BURST), float(settings.SKEIN_WIDGET_RATE_PER_MINUTE)
    _bucket_take(f"widget-rate:{public_key}:{client}", burst, per_minute)
    key_rate = float(settings.SKEIN_WIDGET_KEY_RATE_PER_MINUTE)
    _bucket_take(f"widget-key-rate:{public_key}", max(burst, key_rate / 6), key_rate)


def _bucket_take(name: str, burst: float, per_minute: float) -> None:
    if burst <= 0 or per_minute <= 0:
        return
    taken, wait = backend().bucket_take(name, burst=burst, per_second=per_minute / 60.0, now=time.time())
    if not taken:
        raise RateLimited(wait)


def rate_limit_reset() -> None:
    """Forget the process's buckets (tests)."""
    backend().buckets_clear()
