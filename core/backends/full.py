"""The full mode's backend: web processes, workers and beat share locks, signals and buckets
through Redis, which may be down or restarted for a moment.

- **Locks**: ``SET NX PX`` with a random token, renewed by this process's heartbeat while held and
  deleted only by their holder (compare-and-delete). A lock holds no database connection. A holder
  that dies (``kill -9``, a lost machine) stops renewing, so its lock frees itself after its TTL.
  A lock can also be lost while its holder lives (it stalled past the TTL, or Redis restarted and
  someone else took it): the heartbeat notices it (``Lock.lost``); after a Redis restart it takes
  back a held lock nobody else took meanwhile.
- **Signals**: one Redis channel per kind; each process holds a single subscription to it, in a
  background thread, and wakes the waiters registered with it, so waiting holds no Redis
  connection. A signal can be missed (the subscription reconnecting after a restart): waiters wait
  in bounded slices and look again between them.
- **Buckets**: one hash per bucket, taken from by a Lua script, so every process sees one bucket.
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

from core.backends.base import Backend, Lock, Signals

logger = logging.getLogger("skein.backends")

POLL_S = 0.25  # how often a caller waiting for a lock asks again
SUBSCRIBE_WAIT_S = 2.0  # how long a waiter gives a (re)connecting subscription before looking anyway

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
# KEYS[1] bucket; ARGV: burst, refill per second, now; returns {taken, seconds until one token}
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


@lru_cache(maxsize=4)
def _client(url: str):
    return redis.Redis.from_url(url, socket_timeout=5, socket_connect_timeout=5, health_check_interval=30)


@lru_cache(maxsize=4)
def _scripts(url: str):
    """(renew, release) of the locks."""
    client = _client(url)
    return client.register_script(_RENEW_LUA), client.register_script(_RELEASE_LUA)


@lru_cache(maxsize=4)
def _bucket_script(url: str):
    return redis.Redis.from_url(url).register_script(_BUCKET_LUA)


class _Heartbeat:
    """One daemon thread per process renewing every lock the process holds, each TTL/3."""

    def __init__(self):
        self._guard = threading.Lock()
        self._held: dict[int, tuple[Lock, str, float]] = {}
        self._thread: threading.Thread | None = None
        self._added = threading.Event()

    def add(self, lock: Lock, url: str, ttl_s: float) -> None:
        with self._guard:
            self._held[id(lock)] = (lock, url, ttl_s)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="skein-locks", daemon=True)
                self._thread.start()
        self._added.set()  # a sleeping heartbeat starts its next period now, with the new lock's TTL

    def remove(self, lock: Lock) -> None:
        with self._guard:
            self._held.pop(id(lock), None)

    def _run(self) -> None:
        renewed_at = time.monotonic()
        while True:
            with self._guard:
                held = list(self._held.values())
            period = min((ttl_s for _, _, ttl_s in held), default=settings.SKEIN_TURN_LOCK_TTL_S) / 3
            due = renewed_at + period
            if time.monotonic() < due:
                # woken early when a lock is added, so that a shorter TTL takes effect at once
                self._added.wait(due - time.monotonic())
                self._added.clear()
                continue
            renewed_at = time.monotonic()
            for lock, url, ttl_s in held:
                with lock.mutex:
                    if lock.released:
                        continue
                    try:
                        renewed = _scripts(url)[0](keys=[lock.key], args=[lock.token, int(ttl_s * 1000)])
                    except redis.exceptions.RedisError as exc:  # Redis away: the fencing token still guards the commit
                        logger.warning("lock %s: not renewed (%s: %s)", lock.key, type(exc).__name__, exc)
                        continue
                if not renewed and not lock.lost:
                    lock.lost = True
                    logger.warning("lock %s: lost to another holder", lock.key)


_heartbeat = _Heartbeat()


class RedisSignals(Signals):
    """This process's subscription to one channel, and the waiters registered with it."""

    def __init__(self, url: str, channel: str, *, encode, decode):
        super().__init__()
        self._url, self._channel = url, channel
        self._encode, self._decode = encode, decode
        self._subscribed = threading.Event()
        self._listener: threading.Thread | None = None
        self._pubsub = None
        self._closed = False

    def publish(self, key: int, payload=None) -> None:
        _client(self._url).publish(self._channel, self._encode(key, payload))

    def _ready(self, timeout: float) -> None:
        # Listening before looking: what is published after the look reaches us.
        self._subscribed.wait(min(SUBSCRIBE_WAIT_S, timeout))

    def register(self, key: int, waiter) -> None:
        with self._lock:
            self._waiters.setdefault(key, set()).add(waiter)
            if not self._closed and (self._listener is None or not self._listener.is_alive()):
                self._listener = threading.Thread(target=self._listen, name="skein-signals", daemon=True)
                self._listener.start()

    def _listen(self) -> None:
        while not self._closed:
            try:
                pubsub = self._pubsub = redis.Redis.from_url(self._url, health_check_interval=30).pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(self._channel)
                self._subscribed.set()
                for message in pubsub.listen():
                    self._wake(*self._decode(message["data"]))
            except Exception as exc:  # Redis went away: waiters fall back on their slices meanwhile
                self._subscribed.clear()
                if not self._closed:
                    logger.warning("signals of %s: %s: %s; resubscribing", self._channel, type(exc).__name__, exc)
                    time.sleep(0.5)
            finally:
                self._close_pubsub()

    def close(self) -> None:
        self._closed = True
        self._close_pubsub()
        if self._listener is not None:
            self._listener.join(timeout=5)

    def _close_pubsub(self) -> None:
        pubsub, self._pubsub = self._pubsub, None
        if pubsub is not None:
            try:
                pubsub.close()
            except Exception:  # closing a broken connection is best effort
                pass


class FullBackend(Backend):
    name = "full"
    turns_in_request = False

    def __init__(self):
        self.url = settings.REDIS_URL
        self.namespace = settings.SKEIN_NAMESPACE
        self._guard = threading.Lock()
        self._signals: dict[str, RedisSignals] = {}

    @contextmanager
    def lock(self, key: str, *, ttl_s: float, wait_s: float = 0.0):
        key = f"{self.namespace}:{key}"
        token = secrets.token_hex(16)
        client = _client(self.url)
        ttl_ms = int(ttl_s * 1000)
        deadline = time.monotonic() + wait_s
        acquired = bool(client.set(key, token, nx=True, px=ttl_ms))
        while not acquired and time.monotonic() < deadline:
            time.sleep(POLL_S)
            acquired = bool(client.set(key, token, nx=True, px=ttl_ms))
        lock = Lock(key, token, acquired)
        if not acquired:
            yield lock
            return
        _heartbeat.add(lock, self.url, ttl_s)
        try:
            yield lock
        finally:
            _heartbeat.remove(lock)
            with lock.mutex:
                lock.released = True
                try:
                    _scripts(self.url)[1](keys=[key], args=[token])
                except redis.exceptions.RedisError as exc:  # it expires by itself within the TTL
                    logger.warning("lock %s: not released (%s: %s)", key, type(exc).__name__, exc)

    def takeover_wait_s(self, ttl_s: float) -> float:
        return ttl_s + 1.0  # a dead holder's lock frees itself within its TTL

    def signals(self, channel: str, *, encode, decode) -> Signals:
        with self._guard:
            signals = self._signals.get(channel)
            if signals is None:
                signals = self._signals[channel] = RedisSignals(self.url, f"{self.namespace}:{channel}", encode=encode, decode=decode)
            return signals

    def bucket_take(self, name: str, *, burst: float, per_second: float, now: float) -> tuple[bool, float]:
        taken, wait = _bucket_script(self.url)(keys=[f"{self.namespace}:{name}"], args=[burst, per_second, now])
        return bool(int(taken)), float(wait)

    def close(self) -> None:
        with self._guard:
            for signals in self._signals.values():
                signals.close()
            self._signals.clear()
