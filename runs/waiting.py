"""Waiting for a run to finish, in one place: the signal a finished run sends, the wait on it
(``run_wait``), and a request's wait through infrastructure faults (``turn_wait``).

A finished run is signalled after its final commit on the mode's ``runs-done`` channel
(``core.backends``: in the full mode one Redis channel, which each web process hears through a
single subscription; in the embedded mode the process itself). A waiting request holds no Redis
connection and no database connection, so hundreds can wait at once. A signal can be missed (the
subscription reconnecting after a Redis restart): callers wait in bounded slices and re-read the
run between them (``turn_wait``).
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import time

import redis
from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import InterfaceError, OperationalError, connection, connections
from django.utils.dateparse import parse_datetime

from core.backends import backend
from runs.models import Run

logger = logging.getLogger("skein.runs")

SLICE_S = 5.0  # the longest a lost signal can delay an answer
TRANSIENT = (OperationalError, InterfaceError, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)

# What a finished run's signal carries, so that a coroutine waiting for it answers without reading
# the database (runs/api/deferred.py's answers read no other field of the run).
OUTCOME_FIELDS = ("id", "thread_id", "status", "output", "error", "warnings", "created", "prompt_tokens", "completion_tokens")
MAX_SIGNAL_BYTES = 64_000  # a larger outcome is signalled by the run's id alone: the waiters read it


def _encoded(run_id: int, outcome: Run | None) -> str:
    """A signal's message: the run's id, with its outcome when small enough."""
    if outcome is None:
        return str(run_id)
    fields = {name: getattr(outcome, name) for name in OUTCOME_FIELDS} | {"created": outcome.created.isoformat()}
    carried = json.dumps({"run": run_id, "outcome": fields})
    return carried if len(carried) <= MAX_SIGNAL_BYTES else str(run_id)


def _decoded(data) -> tuple[int, Run | None]:
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


def run_signals():
    """This process's ``Signals`` of finished runs (``core.backends``)."""
    return backend().signals("runs-done", encode=_encoded, decode=_decoded)


def signal_run_done(run_id: int, outcome: Run | None = None) -> None:
    """Wake whoever waits for ``run_id`` (it ended and was committed); ``outcome``, the run as
    stored, rides along when small enough."""
    run_signals().publish(run_id, outcome)


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
    return run_signals().wait(run_id, timeout, lambda: _run_done(run_id))


class _Kick:
    """A waiter of ``run_signals()`` that wakes the run watcher (``set`` is called from any thread)."""

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
        signals = run_signals()
        kick = _Kick(self, self._loop)
        signals.register(run_id, kick)
        future = self._loop.create_future()
        self._pending.setdefault(run_id, set()).add(future)
        self.kick()
        try:
            return await asyncio.wait_for(asyncio.shield(future), timeout)
        except TimeoutError:
            return None
        finally:
            signals.unregister(run_id, kick)
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
        # What the deferred answers read (runs/api/deferred.py, the chat API's and /v1's): no lazy loads there.
        fields = ("id", "thread_id", "status", "output", "error", "warnings", "created", "prompt_tokens", "completion_tokens")
        return list(Run.objects.filter(pk__in=run_ids, status__in=done).only(*fields))
    finally:
        if connection.vendor == "postgresql" and not connection.in_atomic_block:
            connection.close()  # a pool's connection goes back to it; also a broken one


_watchers: dict[asyncio.AbstractEventLoop, _RunWatcher] = {}


async def turn_wait_async(*, run_id: int, timeout: float) -> Run | None:
    """``turn_wait`` for a coroutine (``runs/api/deferred.py``): the run once it ended, or None when
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
    ``core/errors.py``)."""
    if backend().turns_in_request:  # the turn ran in the request
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
