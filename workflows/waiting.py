"""Waiting for a run to finish, in one place: the signal a finished run sends, the wait on it
(``run_wait``), and a request's wait through infrastructure faults (``turn_wait``).

The chat API answers once the turn is done.
The worker publishes the run's id on one Redis channel after the run's final commit. Each web
process holds a single subscription to that channel, in a background thread, and wakes the
requests waiting for that run: a waiting request holds no Redis connection and no database
connection, so hundreds can wait at once. A signal can be missed (the subscription reconnecting
after a Redis restart): callers wait in bounded slices and re-read the run between them
(``turn_wait``).

In the embedded mode a turn runs in the process, usually inside the request that started it; a
request whose turn is queued behind another turn of its thread waits here too, woken in-process
when its own run is done (no Redis).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import threading
import time
from functools import lru_cache

import redis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, connections
from django.utils.dateparse import parse_datetime

from . import mode
from .models import Run

logger = logging.getLogger("skein.runs")

SUBSCRIBE_WAIT_S = 2.0  # how long a waiter gives a (re)connecting subscription before checking anyway
SLICE_S = 5.0  # the longest a lost signal can delay an answer
TRANSIENT = (OperationalError, InterfaceError, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


@lru_cache(maxsize=1)
def _redis():
    return redis.Redis.from_url(settings.REDIS_URL, health_check_interval=30)


def _channel() -> str:
    return f"{settings.SKEIN_NAMESPACE}:runs-done"


# What a finished run's signal carries, so that a coroutine waiting for it answers without reading
# the database (api/deferred.py's answers read no other field of the run).
OUTCOME_FIELDS = ("id", "thread_id", "status", "output", "error", "warnings", "created", "prompt_tokens", "completion_tokens")
MAX_SIGNAL_BYTES = 64_000  # a larger outcome is signalled by the run's id alone: the waiters read it


def signal_run_done(run_id: int, outcome: Run | None = None) -> None:
    """Wake whoever waits for ``run_id`` (it ended and was committed); ``outcome``, the run as
    stored, rides along when small enough."""
    if mode.full():
        message = str(run_id)
        if outcome is not None:
            fields = {name: getattr(outcome, name) for name in OUTCOME_FIELDS} | {"created": outcome.created.isoformat()}
            carried = json.dumps({"run": run_id, "outcome": fields})
            message = carried if len(carried) <= MAX_SIGNAL_BYTES else message
        _redis().publish(_channel(), message)
    else:
        _local_signals.wake(run_id, outcome)


def _signalled(data) -> tuple[int, Run | None]:
    """(run id, the run's outcome or None) from a signal's message."""
    text = data.decode() if isinstance(data, bytes) else str(data)
    if not text.startswith("{"):
        return int(text), None
    message = json.loads(text)
    outcome = message["outcome"]
    outcome["created"] = parse_datetime(outcome["created"])
    names = [f.attname for f in Run._meta.concrete_fields if f.attname in outcome]
    # Only these fields are loaded: reading another one would be a query (refused in a coroutine).
    return message["run"], Run.from_db(None, names, [outcome[name] for name in names])


class _RunSignals:
    """This process's subscription to finished runs, and the requests waiting on them."""

    def __init__(self):
        self._lock = threading.Lock()
        self._waiters: dict[int, set[threading.Event]] = {}
        self._subscribed = threading.Event()
        self._listener: threading.Thread | None = None
        self._pubsub = None
        self._closed = False

    def wait(self, run_id: int, timeout: float, is_done) -> bool:
        """True once ``run_id`` is signalled or ``is_done()``; False after ``timeout`` seconds."""
        event = threading.Event()
        self._register(run_id, event)
        try:
            # Listening before looking: a run that ends after the look is signalled to us.
            self._subscribed.wait(min(SUBSCRIBE_WAIT_S, timeout))
            return is_done() or event.wait(timeout)
        finally:
            self._unregister(run_id, event)

    def _register(self, run_id: int, waiter) -> None:
        with self._lock:
            self._waiters.setdefault(run_id, set()).add(waiter)
            if self._listener is None or not self._listener.is_alive():
                self._listener = threading.Thread(target=self._listen, name="skein-run-signals", daemon=True)
                self._listener.start()

    def _unregister(self, run_id: int, waiter) -> None:
        with self._lock:
            waiting = self._waiters.get(run_id)
            if waiting is not None:
                waiting.discard(waiter)
                if not waiting:
                    del self._waiters[run_id]

    def _listen(self) -> None:
        while not self._closed:
            try:
                pubsub = self._pubsub = _redis().pubsub(ignore_subscribe_messages=True)
                pubsub.subscribe(_channel())
                self._subscribed.set()
                for message in pubsub.listen():
                    self._wake(*_signalled(message["data"]))
            except Exception as exc:  # Redis went away: waiters fall back on their slices meanwhile
                self._subscribed.clear()
                if not self._closed:
                    logger.warning("run signals: %s: %s; resubscribing", type(exc).__name__, exc)
                    time.sleep(0.5)
            finally:
                self._close_pubsub()

    def close(self) -> None:
        """Stop listening (a test's subscription, on its own channel, ends with the test)."""
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

    def _wake(self, run_id: int, outcome: Run | None = None) -> None:
        with self._lock:
            for waiter in self._waiters.get(run_id, ()):
                if isinstance(waiter, _Kick):
                    waiter.set(run_id, outcome)
                else:
                    waiter.set()


class _LocalSignals(_RunSignals):
    """The embedded mode's: runs end in this process, which wakes its waiters directly."""

    def wait(self, run_id: int, timeout: float, is_done) -> bool:
        event = threading.Event()
        with self._lock:
            self._waiters.setdefault(run_id, set()).add(event)
        try:
            return is_done() or event.wait(timeout)  # registered before looking: no end is missed
        finally:
            self._unregister(run_id, event)

    def _register(self, run_id: int, waiter) -> None:
        with self._lock:  # no subscription: runs end in this process
            self._waiters.setdefault(run_id, set()).add(waiter)

    def wake(self, run_id: int, outcome: Run | None = None) -> None:
        self._wake(run_id, outcome)


_signals = _RunSignals()
_local_signals = _LocalSignals()


def _run_done(run_id: int) -> bool:
    try:
        return Run.objects.filter(pk=run_id, status__in=[Run.Status.SUCCEEDED, Run.Status.FAILED]).exists()
    finally:
        # Hand the database connection back while we wait (also a broken one): a hundred waiting
        # requests must not hold a hundred connections. The next query takes one from the pool.
        if not connection.in_atomic_block:
            connection.close()


def wait_for_run(run_id: int, timeout: float) -> bool:
    """True once the run ended (signalled, or seen in the database); False after ``timeout``."""
    return (_signals if mode.full() else _local_signals).wait(run_id, timeout, lambda: _run_done(run_id))


class _Kick:
    """A ``_RunSignals`` waiter that wakes the run watcher (``set`` is called from any thread)."""

    def __init__(self, watcher: _RunWatcher, loop):
        self._watcher, self._loop = watcher, loop

    def set(self, run_id: int, outcome: Run | None = None) -> None:
        if outcome is None:
            self._loop.call_soon_threadsafe(self._watcher.kick)
        else:
            self._loop.call_soon_threadsafe(self._watcher.ended, run_id, outcome)


class _RunWatcher:
    """The coroutines' waits of one event loop, with their database reads batched: one query
    reads every waited run that ended, when a run signal arrives, when a waiter comes, and every
    ``SLICE_S`` (a lost signal delays an answer by that much at most). Its queries run on
    asgiref's one shared thread for thread-sensitive code outside requests, one at a time."""

    def __init__(self, loop):
        self._loop = loop
        self._pending: dict[int, set[asyncio.Future]] = {}
        self._kicked = asyncio.Event()
        # A context of its own: not the request's that happened to start it (its Local storage).
        self._task = loop.create_task(self._watch(), context=contextvars.Context())

    def kick(self) -> None:
        self._kicked.set()

    def ended(self, run_id: int, run: Run) -> None:
        """A signal that carried the run's outcome: its waiters are answered with no query."""
        for future in self._pending.pop(run_id, ()):
            if not future.done():
                future.set_result(run)

    async def wait(self, run_id: int, timeout: float) -> Run | None:
        """The run once it ended (its status and outcome loaded), or None after ``timeout``."""
        signals = _signals if mode.full() else _local_signals
        kick = _Kick(self, self._loop)
        signals._register(run_id, kick)
        future = self._loop.create_future()
        self._pending.setdefault(run_id, set()).add(future)
        self.kick()
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            return None
        finally:
            signals._unregister(run_id, kick)
            waiting = self._pending.get(run_id)
            if waiting is not None:
                waiting.discard(future)
                if not waiting:
                    del self._pending[run_id]

    async def _watch(self) -> None:
        while True:
            try:
                await asyncio.wait_for(self._kicked.wait(), SLICE_S)
            except TimeoutError:
                pass
            self._kicked.clear()
            await asyncio.sleep(0.005)  # the other signals and waiters of this moment: one query
            if not self._pending:
                continue
            try:
                ended = await _ended_runs(list(self._pending))
            except Exception as exc:  # the database away: waiters wait on, their bounds are theirs
                logger.warning("waiting for runs: %s: %s; waiting on", type(exc).__name__, exc)
                await asyncio.sleep(1.0)
                self.kick()
                continue
            for run in ended:
                for future in self._pending.pop(run.pk, ()):
                    if not future.done():
                        future.set_result(run)


@sync_to_async(thread_sensitive=True)
def _ended_runs(run_ids: list[int]) -> list[Run]:
    try:
        done = (Run.Status.SUCCEEDED, Run.Status.FAILED)
        # What the deferred answers read (api/deferred.py, the chat API's and /v1's): no lazy loads there.
        fields = ("id", "thread_id", "status", "output", "error", "warnings", "created", "prompt_tokens", "completion_tokens")
        return list(Run.objects.filter(pk__in=run_ids, status__in=done).only(*fields))
    finally:
        if connection.vendor == "postgresql" and not connection.in_atomic_block:
            connection.close()  # a pool's connection goes back to it; also a broken one


_watchers: dict[asyncio.AbstractEventLoop, _RunWatcher] = {}


async def turn_wait_async(*, run_id: int, timeout: float) -> Run | None:
    """``turn_wait`` for a coroutine (``api/deferred.py``): the run once it ended, or None when
    ``timeout`` ran out, holding no thread and no database connection meanwhile."""
    loop = asyncio.get_running_loop()
    watcher = _watchers.get(loop)
    if watcher is None:
        for closed in [other for other in _watchers if other.is_closed()]:  # loops of finished async_to_sync calls
            del _watchers[closed]
        watcher = _watchers[loop] = _RunWatcher(loop)
    return await watcher.wait(run_id, timeout)


def run_wait(*, run, timeout: float | None = None):
    """Block until the run finished (or ``timeout``); in the embedded mode it already has."""
    if not run.is_done:
        wait_for_run(run.pk, settings.SKEIN_CHAT_WAIT_S if timeout is None else timeout)
        run.refresh_from_db()
    return run


def turn_wait(*, run, timeout: float | None = None):
    """A request's wait: the run once it ended, or as it is when ``timeout`` (default
    SKEIN_CHAT_WAIT_S) ran out.

    In the full mode the run's signal can be lost (Redis restarted between the worker's push and
    the wait, or the push failed while Redis was down), and the waiting request's database or Redis
    connection can break meanwhile. The run itself is safe in the database and ends anyway (the
    worker takes it up again, beat recovers lost tasks), so the request waits on, in slices:
    between slices it reads the run from the database, over a new connection if need be. The bound
    stays the caller's; only a fault that outlasts it reaches the client (a 503, see
    ``api/errors.py``)."""
    if mode.turns_in_request():  # the turn ran in the request
        return run_wait(run=run, timeout=timeout)
    deadline = time.monotonic() + (settings.SKEIN_CHAT_WAIT_S if timeout is None else timeout)
    while True:
        remaining = deadline - time.monotonic()
        try:
            run = run_wait(run=run, timeout=max(1.0, min(SLICE_S, remaining)))
        except TRANSIENT as exc:
            if time.monotonic() >= deadline or connections["default"].in_atomic_block:
                raise
            logger.warning("waiting for run %s: %s: %s; waiting on", run.pk, type(exc).__name__, exc)
            connections.close_all()  # this request's connections; the next query opens a new one
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
            continue
        if run.is_done or time.monotonic() >= deadline:
            return run
