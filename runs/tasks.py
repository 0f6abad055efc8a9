"""The turn's Celery tasks: thin, they load by id and hand to the service (imported in their body)."""

import logging
import time

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError, connections

from runs import runtime  # noqa: F401  (runtime imports litellm: pay its import at worker start)

logger = logging.getLogger("skein.runs")

# A turn whose database connection is lost mid-way (the server restarted or failed over, an
# administrator or a pooler terminated the backend) is taken up again at once on a new connection
# instead of failing its task and waiting, RUNNING, for the periodic recovery. Safe: the turn lock
# lets one execution through, and a run found RUNNING is executed again from a clean slate.
CONNECTION_RETRIES = 6
CONNECTION_RETRY_DELAYS_S = (0.2, 0.5, 1, 2, 4, 8)


def _connection_lost(exc: Exception) -> bool:
    """Whether ``exc`` says the PostgreSQL connection was lost (rather than that a query failed).

    By then Django may already have opened a new connection (to release the turn lock, say), so
    the error itself is asked, not the connection. SQLite (the embedded mode) has no connection to
    lose: its errors are never retried."""
    if connections["default"].vendor != "postgresql":
        return False
    if isinstance(exc, InterfaceError):
        return True
    sqlstate = getattr(exc.__cause__, "sqlstate", None)
    if sqlstate is None:
        return True  # psycopg's own "the connection is closed", "server closed the connection unexpectedly"
    return sqlstate.startswith(("08", "57P"))  # connection exception; admin or crash shutdown, cannot connect now


# Task names are pinned to those of earlier releases: beat's rows (django-celery-beat) and turns
# still queued in the broker name a task by them, and must reach it after an upgrade.
@shared_task(
    name="workflows.tasks.run_turn",
    acks_late=True,
    reject_on_worker_lost=True,
    ignore_result=True,
    soft_time_limit=settings.SKEIN_TURN_SOFT_TIME_LIMIT_S,
    time_limit=settings.SKEIN_TURN_TIME_LIMIT_S,
)
def run_turn(run_id: int) -> None:
    """Thin: load by id and hand to the turn service. Safe to deliver twice."""
    from runs import turns  # services import tasks at the top; tasks import services in their body

    for attempt in range(CONNECTION_RETRIES + 1):
        try:
            turns.turn_process(run_id=run_id)
            return
        except (OperationalError, InterfaceError) as exc:
            if attempt == CONNECTION_RETRIES or not _connection_lost(exc) or connections["default"].in_atomic_block:
                raise
            delay = CONNECTION_RETRY_DELAYS_S[min(attempt, len(CONNECTION_RETRY_DELAYS_S) - 1)]
            logger.warning("run %s: database connection lost (%s); taking the turn up again in %.1f s", run_id, exc, delay)
            connections.close_all()  # this thread's connections: the next query opens a new one
            time.sleep(delay)


@shared_task(name="workflows.tasks.recover_turns", ignore_result=True, soft_time_limit=120, time_limit=180)
def recover_turns(older_than_s: float | None = None) -> None:
    """Periodic (beat): re-enqueue turns that no worker is executing any more (unfinished for
    ``older_than_s``, default the service's; an operator may pass a shorter one after an outage)."""
    from runs import services as runs

    runs.turns_recover(**({} if older_than_s is None else {"older_than_s": float(older_than_s)}))
