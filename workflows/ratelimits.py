"""Token buckets for widget messages: per public key and visitor (``SKEIN_WIDGET_BURST`` at once,
refilled at ``SKEIN_WIDGET_RATE_PER_MINUTE``), and per key for all its visitors together
(``SKEIN_WIDGET_KEY_RATE_PER_MINUTE``). Shared through Redis in the full mode (every web process
sees one bucket); per process in the embedded mode, which is one process."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings

from . import mode


class RateLimited(Exception):
    """The bucket is empty: one more message in ``wait`` seconds."""

    code = "rate_limited"

    def __init__(self, wait: float):
        super().__init__(f"Too many messages; try again in {max(1, round(wait))} s.")
        self.message = str(self)
        self.wait = wait


def _rate() -> tuple[float, float]:
    """(burst, messages per minute) per key and client."""
    return float(settings.SKEIN_WIDGET_BURST), float(settings.SKEIN_WIDGET_RATE_PER_MINUTE)


@dataclass
class _Bucket:
    tokens: float
    at: float


_local_buckets: dict[str, _Bucket] = {}
_local_lock = threading.Lock()

# KEYS[1] bucket; ARGV: burst, refill per second, now; returns {allowed, seconds until one token}
_BUCKET_LUA = """
local burst, rate, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(state[1]), tonumber(state[2])
if tokens == nil then tokens, at = burst, now end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local allowed = 0
if tokens >= 1 then tokens = tokens - 1; allowed = 1 end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('EXPIRE', KEYS[1], math.ceil(burst / rate) + 60)
return {allowed, tostring((1 - tokens) / rate)}
"""


@lru_cache(maxsize=1)
def _redis_script():
    import redis

    return redis.Redis.from_url(settings.REDIS_URL).register_script(_BUCKET_LUA)


def rate_limit_take(*, public_key: str, client: str) -> None:
    """Take one message from the (key, client) token bucket and one from the key's own budget
    (all its visitors together, ``SKEIN_WIDGET_KEY_RATE_PER_MINUTE``), or raise ``RateLimited``."""
    burst, per_minute = _rate()
    _bucket_take(f"{settings.SKEIN_NAMESPACE}:widget-rate:{public_key}:{client}", burst, per_minute)
    key_rate = float(settings.SKEIN_WIDGET_KEY_RATE_PER_MINUTE)
    _bucket_take(f"{settings.SKEIN_NAMESPACE}:widget-key-rate:{public_key}", max(burst, key_rate / 6), key_rate)


def _bucket_take(name: str, burst: float, per_minute: float) -> None:
    if burst <= 0 or per_minute <= 0:
        return
    rate = per_minute / 60.0
    now = time.time()
    if mode.full():
        allowed, wait = _redis_script()(keys=[name], args=[burst, rate, now])
        allowed, wait = int(allowed), float(wait)
    else:
        with _local_lock:
            bucket = _local_buckets.get(name) or _Bucket(tokens=burst, at=now)
            bucket.tokens = min(burst, bucket.tokens + max(0.0, now - bucket.at) * rate)
            bucket.at = now
            allowed = bucket.tokens >= 1
            if allowed:
                bucket.tokens -= 1
            wait = (1 - bucket.tokens) / rate
            _local_buckets[name] = bucket
    if not allowed:
        raise RateLimited(wait)


def rate_limit_reset() -> None:
    """Forget the process-local buckets (tests)."""
    with _local_lock:
        _local_buckets.clear()
