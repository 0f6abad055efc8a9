"""Waiting for a turn from a request, through infrastructure faults (full mode).

``services.run_wait`` blocks on the run's signal in Redis. That signal can be lost (Redis restarted
between the worker's push and the wait, or the push failed while Redis was down), and the waiting
request's database or Redis connection can break meanwhile. The run itself is safe in the database
and ends anyway (the worker takes it up again, beat recovers lost tasks), so the request waits on,
in slices: between slices it reads the run from the database, over a new connection if need be.
The bound stays the caller's; only a fault that outlasts it reaches the client (a 503, see
``errors.py``).
"""

from __future__ import annotations

import logging
import time

import redis
from django.conf import settings
from django.db import InterfaceError, OperationalError, connections

from workflows import services

logger = logging.getLogger("skein.runs")

SLICE_S = 5.0  # the longest a lost signal can delay an answer
TRANSIENT = (OperationalError, InterfaceError, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)


def turn_wait(*, run, timeout: float | None = None):
    """The run once it ended, or as it is when ``timeout`` (default SKEIN_CHAT_WAIT_S) ran out."""
    if not settings.FULL_MODE:  # turns ran eagerly, in the request
        return services.run_wait(run=run, timeout=timeout)
    deadline = time.monotonic() + (settings.SKEIN_CHAT_WAIT_S if timeout is None else timeout)
    while True:
        remaining = deadline - time.monotonic()
        try:
            run = services.run_wait(run=run, timeout=max(1.0, min(SLICE_S, remaining)))
        except TRANSIENT as exc:
            if time.monotonic() >= deadline or connections["default"].in_atomic_block:
                raise
            logger.warning("waiting for run %s: %s: %s; waiting on", run.pk, type(exc).__name__, exc)
            connections.close_all()  # this request's connections; the next query opens a new one
            time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
            continue
        if run.is_done or time.monotonic() >= deadline:
            return run
