"""Non-blocking turn locks: one turn at a time per thread (or per thread-less run).

On PostgreSQL a session advisory lock, released by the server if the worker dies; on SQLite (the
embedded mode, one process) a process-local lock.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

from django.db import connection

THREAD_SCOPE = 1
RUN_SCOPE = 2


def turn_scope(run) -> tuple[int, int]:
    """The lock a run's turn takes: its thread's, or its own when it has no thread."""
    return (THREAD_SCOPE, run.thread_id) if run.thread_id else (RUN_SCOPE, run.pk)


_local_guard = threading.Lock()
_local_locks: dict[tuple[int, int], threading.Lock] = {}


@contextmanager
def try_turn_lock(scope: int, object_id: int):
    """Yields True when this caller holds the lock, False when someone else does."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [scope, object_id])
            acquired = cursor.fetchone()[0]
        try:
            yield acquired
        finally:
            if acquired:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [scope, object_id])
        return
    with _local_guard:
        lock = _local_locks.setdefault((scope, object_id), threading.Lock())
    acquired = lock.acquire(blocking=False)
    try:
        yield acquired
    finally:
        if acquired:
            lock.release()
