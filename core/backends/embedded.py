"""The embedded mode's backend: one process, so locks, signals and buckets live in it."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from dataclasses import dataclass

from core.backends.base import Backend, Lock, Signals


class LocalSignals(Signals):
    """Everything that is waited for ends in this process, which wakes its waiters directly."""

    def publish(self, key: int, payload=None) -> None:
        self._wake(key, payload)


@dataclass
class _Bucket:
    tokens: float
    at: float


class EmbeddedBackend(Backend):
    name = "embedded"
    turns_in_request = True

    def __init__(self):
        self._guard = threading.Lock()
        self._locks: dict[str, threading.Lock] = {}
        self._signals: dict[str, LocalSignals] = {}
        self._buckets: dict[str, _Bucket] = {}

    @contextmanager
    def lock(self, key: str, *, ttl_s: float, wait_s: float = 0.0):
        # A holder dies only with the process, so nobody needs to wait for a lock to expire.
        with self._guard:
            lock = self._locks.setdefault(key, threading.Lock())
        acquired = lock.acquire(blocking=False)
        try:
            yield Lock(key, "", acquired)
        finally:
            if acquired:
                lock.release()

    def takeover_wait_s(self, ttl_s: float) -> float:
        return 0.0  # the holder is alive in this process

    def signals(self, channel: str, *, encode, decode) -> Signals:
        with self._guard:
            return self._signals.setdefault(channel, LocalSignals())

    def bucket_take(self, name: str, *, burst: float, per_second: float, now: float) -> tuple[bool, float]:
        with self._guard:
            bucket = self._buckets.get(name) or _Bucket(tokens=burst, at=now)
            bucket.tokens = min(burst, bucket.tokens + max(0.0, now - bucket.at) * per_second)
            bucket.at = now
            taken = bucket.tokens >= 1
            if taken:
                bucket.tokens -= 1
            self._buckets[name] = bucket
            return taken, (1 - bucket.tokens) / per_second

    def buckets_clear(self) -> None:
        with self._guard:
            self._buckets.clear()
