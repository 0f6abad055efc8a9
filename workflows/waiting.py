"""Waiting for a run to finish across processes (the chat API answers once the turn is done).

The worker pushes to a per-run Redis list after the run's final commit; the waiting web request
blocks on it (BLPOP), so it wakes at once rather than polling. In the embedded mode turns run
eagerly in-process, so there is nothing to wait for.
"""

from __future__ import annotations

from functools import lru_cache

from django.conf import settings
from django.db import connection


@lru_cache(maxsize=1)
def _redis():
    import redis

    # No socket timeout: BLPOP itself bounds the wait.
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=None, health_check_interval=30)


def _key(run_id: int) -> str:
    return f"{settings.SKEIN_NAMESPACE}:run-done:{run_id}"


def signal_run_done(run_id: int) -> None:
    if not settings.FULL_MODE:
        return
    client = _redis()
    pipe = client.pipeline()
    pipe.rpush(_key(run_id), 1)
    pipe.expire(_key(run_id), 300)
    pipe.execute()


def wait_for_run(run_id: int, timeout: float) -> bool:
    if not settings.FULL_MODE:
        return True
    from .models import Run

    # The run may have finished before we started listening: the pushed item stays in the list.
    if Run.objects.filter(pk=run_id, status__in=[Run.Status.SUCCEEDED, Run.Status.FAILED]).exists():
        return True
    # Hand the database connection back while we wait: a hundred waiting requests must not hold a
    # hundred connections. Django reconnects on the next query.
    if not connection.in_atomic_block:
        connection.close()
    return _redis().blpop([_key(run_id)], timeout=max(1, int(timeout + 0.999))) is not None
