"""What a mode's backend provides (``core.backends``): locks, signals, token buckets."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager


class Lock:
    """A held (truthy) or refused (falsy) lock; ``lost`` once its holder can tell that someone else
    holds it now (the full mode's heartbeat sees it). A lost lock proves nothing about who may
    write: writers check a fencing token of their own (a run's ``attempts``)."""

    def __init__(self, key: str, token: str, acquired: bool):
        self.key, self.token, self.acquired = key, token, acquired
        self.lost = False
        self.released = False
        # A renewal (full mode) and the release never overlap: a released lock is never brought back.
        self.mutex = threading.Lock()

    def __bool__(self) -> bool:
        return self.acquired


class Signals:
    """One channel of wake-ups: ``publish(key, payload)`` wakes every waiter registered for ``key``
    in every process of the mode. A waiter is a ``threading.Event`` or has ``set(key, payload)``."""

    def __init__(self):
        self._lock = threading.Lock()
        self._waiters: dict[int, set] = {}

    def publish(self, key: int, payload=None) -> None:
        raise NotImplementedError  # each mode's backend sends its own way

    def wait(self, key: int, timeout: float, is_done: Callable[[], bool]) -> bool:
        """True once ``key`` is published or ``is_done()``; False after ``timeout`` seconds."""
        event = threading.Event()
        self.register(key, event)
        try:
            self._ready(timeout)
            return is_done() or event.wait(timeout)  # registered before looking: no wake-up is missed
        finally:
            self.unregister(key, event)

    def _ready(self, timeout: float) -> None:
        """Until this process hears what is published (the full mode's subscription), at most ``timeout``."""

    def register(self, key: int, waiter) -> None:
        with self._lock:
            self._waiters.setdefault(key, set()).add(waiter)

    def unregister(self, key: int, waiter) -> None:
        with self._lock:
            waiting = self._waiters.get(key)
            if waiting is not None:
                waiting.discard(waiter)
                if not waiting:
                    del self._waiters[key]

    def _wake(self, key: int, payload=None) -> None:
        with self._lock:
            for waiter in self._waiters.get(key, ()):
                if isinstance(waiter, threading.Event):
                    waiter.set()
                else:
                    waiter.set(key, payload)

    def close(self) -> None:
        """Stop hearing what is published (a backend being replaced, a test's channel)."""


class Backend:
    """One mode's mechanisms. Subclasses: ``embedded.EmbeddedBackend``, ``full.FullBackend``."""

    name: str
    # A turn runs in the process that created its run, before that call returns (eager Celery).
    turns_in_request: bool

    def lock(self, key: str, *, ttl_s: float, wait_s: float = 0.0) -> AbstractContextManager[Lock]:
        """Try to take ``key``'s lock (waiting up to ``wait_s``); held until the block ends. A holder
        that dies frees it within ``ttl_s`` (where holders can die without the process: full mode)."""
        raise NotImplementedError

    def takeover_wait_s(self, ttl_s: float) -> float:
        """How long a caller that found interrupted work waits for its lock to free itself."""
        raise NotImplementedError

    def signals(self, channel: str, *, encode: Callable, decode: Callable) -> Signals:
        """This process's ``Signals`` of ``channel`` (one per channel); a payload crosses processes
        as ``encode(key, payload) -> str`` and back as ``decode(str) -> (key, payload)``."""
        raise NotImplementedError

    def bucket_take(self, name: str, *, burst: float, per_second: float, now: float) -> tuple[bool, float]:
        """Take one token from the bucket ``name`` (``burst`` at most, refilled at ``per_second``):
        (taken, seconds until the next token)."""
        raise NotImplementedError

    def buckets_clear(self) -> None:
        """Forget this process's buckets (tests); shared buckets expire by themselves."""

    def close(self) -> None:
        """Release what the backend holds (its subscriptions), when it is replaced."""
