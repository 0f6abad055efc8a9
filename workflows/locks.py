"""Non-blocking turn locks: one turn at a time per thread (or per thread-less run, or per test).

In the full mode a Redis lock: ``SET NX PX`` with a random token, renewed by this process's
heartbeat while it is held and deleted only by its holder (compare-and-delete). It holds no
database connection, so a turn waiting on a model holds none. A holder that dies (``kill -9``,
a lost machine) stops renewing: its lock frees itself after ``SKEIN_TURN_LOCK_TTL_S``, and a
caller that knows the lock's work was interrupted waits that long for it (``takeover_wait_s``).

A lock can also be lost while its holder lives (it stalled past the TTL, or Redis restarted and
someone else took it): the heartbeat notices it (``TurnLock.lost``), but the lock alone never
proves who may write. The turn's final commit checks its fencing token, the run's ``attempts``
(``turns._finish``), so a holder that lost its lock never commits over the new holder. After a
Redis restart the heartbeat takes back a held lock nobody else took meanwhile.

In the embedded mode (one process) a process-local lock.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from contextlib import contextmanager
from functools import lru_cache

import redis
from django.conf import settings

from . import mode

logger = logging.getLogger("skein.runs")

THREAD_SCOPE = 1
RUN_SCOPE = 2

POLL_S = 0.25  # how often a caller waiting for a lock asks again

# Renew when the token is ours; take the lock back if it vanished (Redis restarted empty); else lost.
_RENEW_LUA = """
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if not held then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 2
end
return 0
"""
_RELEASE_LUA = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


def turn_scope(run) -> tuple[int, int]:
    """The lock a run's turn takes: its thread's, or its own when it has no thread."""
    return (THREAD_SCOPE, run.thread_id) if run.thread_id else (RUN_SCOPE, run.pk)


def takeover_wait_s() -> float:
    """How long a caller that found interrupted work waits for its lock: a dead holder's lock
    frees itself within the TTL (full mode); in the embedded mode the holder is alive in-process."""
    return settings.SKEIN_TURN_LOCK_TTL_S + 1.0 if mode.full() else 0.0


class TurnLock:
    """A held (truthy) or refused (falsy) turn lock; ``lost`` once the heartbeat saw another holder."""

    def __init__(self, key: str, token: str, acquired: bool):
        self.key, self.token, self.acquired = key, token, acquired
        self.lost = False
        self.released = False
        # The heartbeat renews (or takes back) a lock only while it is not released, and its
        # release waits for a renewal in flight: a released lock is never brought back to life.
        self.mutex = threading.Lock()

    def __bool__(self) -> bool:
        return self.acquired


@lru_cache(maxsize=4)
def _client(url: str):
    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5, health_check_interval=30)


@lru_cache(maxsize=4)
def _scripts(url: str):
    client = _client(url)
    return client.register_script(_RENEW_LUA), client.register_script(_RELEASE_LUA)


class _Heartbeat:
    """One daemon thread per process renewing every lock the process holds, each TTL/3."""

    def __init__(self):
        self._guard = threading.Lock()
        self._held: dict[int, tuple[TurnLock, str]] = {}
        self._thread: threading.Thread | None = None
        self._added = threading.Event()

    def add(self, lock: TurnLock, url: str) -> None:
        with self._guard:
            self._held[id(lock)] = (lock, url)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="skein-turn-locks", daemon=True)
                self._thread.start()
        self._added.set()  # a sleeping heartbeat starts its next period now, with the current TTL

    def remove(self, lock: TurnLock) -> None:
        with self._guard:
            self._held.pop(id(lock), None)

    def _run(self) -> None:
        renewed_at = time.monotonic()
        while True:
            ttl_ms = int(settings.SKEIN_TURN_LOCK_TTL_S * 1000)
            due = renewed_at + ttl_ms / 3000
            if time.monotonic() < due:
                # woken early when a lock is added, so that a shorter TTL takes effect at once
                self._added.wait(due - time.monotonic())
                self._added.clear()
                continue
            renewed_at = time.monotonic()
            with self._guard:
                held = list(self._held.values())
            for lock, url in held:
                with lock.mutex:
                    if lock.released:
                        continue
                    try:
                        renewed = _scripts(url)[0](keys=[lock.key], args=[lock.token, ttl_ms])
                    except redis.exceptions.RedisError as exc:  # Redis away: the fencing token still guards the commit
                        logger.warning("turn lock %s: not renewed (%s: %s)", lock.key, type(exc).__name__, exc)
                        continue
                if not renewed and not lock.lost:
                    lock.lost = True
                    logger.warning("turn lock %s: lost to another holder", lock.key)


_heartbeat = _Heartbeat()


@contextmanager
def _redis_lock(scope: int, object_id: int, wait_s: float):
    url = settings.REDIS_URL
    key = f"{settings.SKEIN_NAMESPACE}:turn-lock:{scope}:{object_id}"
    token = secrets.token_hex(16)
    client = _client(url)
    ttl_ms = int(settings.SKEIN_TURN_LOCK_TTL_S * 1000)
    deadline = time.monotonic() + wait_s
    acquired = bool(client.set(key, token, nx=True, px=ttl_ms))
    while not acquired and time.monotonic() < deadline:
        time.sleep(POLL_S)
        acquired = bool(client.set(key, token, nx=True, px=ttl_ms))
    lock = TurnLock(key, token, acquired)
    if not acquired:
        yield lock
        return
    _heartbeat.add(lock, url)
    try:
        yield lock
    finally:
        _heartbeat.remove(lock)
        with lock.mutex:
            lock.released = True
            try:
                _scripts(url)[1](keys=[key], args=[token])
            except redis.exceptions.RedisError as exc:  # it expires by itself within the TTL
                logger.warning("turn lock %s: not released (%s: %s)", key, type(exc).__name__, exc)


_local_guard = threading.Lock()
_local_locks: dict[tuple[int, int], threading.Lock] = {}


@contextmanager
def _local_lock(scope: int, object_id: int):
    with _local_guard:
        lock = _local_locks.setdefault((scope, object_id), threading.Lock())
    acquired = lock.acquire(blocking=False)
    try:
        yield TurnLock(f"{scope}:{object_id}", "", acquired)
    finally:
        if acquired:
            lock.release()


def try_turn_lock(scope: int, object_id: int, *, wait_s: float = 0.0):
    """A context manager yielding a ``TurnLock``: truthy when this caller holds the lock, falsy
    when someone else does (after waiting up to ``wait_s`` for it, full mode)."""
    if mode.full():
        return _redis_lock(scope, object_id, wait_s)
    return _local_lock(scope, object_id)
