"""Turn locks: one turn at a time per thread (or per thread-less run, or per test).

A lock is the mode's (``core.backends``): in the full mode a Redis lock that a dead holder frees
within ``SKEIN_TURN_LOCK_TTL_S``, and that a caller who knows the lock's work was interrupted waits
that long for (``takeover_wait_s``); in the embedded mode a lock of the process. A lock never proves
who may write: the turn's final commit checks its fencing token, the run's ``attempts``
(``turns._finish``), so a holder that lost its lock never commits over the new holder.
"""

from __future__ import annotations

from django.conf import settings

from core.backends import backend

THREAD_SCOPE = 1
RUN_SCOPE = 2


def turn_scope(run) -> tuple[int, int]:
    """The lock a run's turn takes: its thread's, or its own when it has no thread."""
    return (THREAD_SCOPE, run.thread_id) if run.thread_id else (RUN_SCOPE, run.pk)


def takeover_wait_s() -> float:
    """How long a caller that found interrupted work waits for its lock (a dead holder's frees itself)."""
    return backend().takeover_wait_s(settings.SKEIN_TURN_LOCK_TTL_S)


def try_turn_lock(scope: int, object_id: int, *, wait_s: float = 0.0):
    """A context manager yielding a ``core.backends.Lock``: truthy when this caller holds the lock,
    falsy when someone else does (after waiting up to ``wait_s`` for it)."""
    return backend().lock(f"turn-lock:{scope}:{object_id}", ttl_s=settings.SKEIN_TURN_LOCK_TTL_S, wait_s=wait_s)
