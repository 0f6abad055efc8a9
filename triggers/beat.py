"""Celery beat for Skein: django-celery-beat's database scheduler, with a heartbeat.

``Scheduler`` is what beat runs (``make beat``, the ``beat`` service, ``worker -B``, and the
embedded server): each pass of the scheduler records when it ran, so the web can say whether
schedules are firing (``schedules_status``) from what beat did, not from a guess.
``EmbeddedScheduler`` is the embedded mode's (``config.embedded_process``): tasks are eager there, so it
hands each due task to a small pool of threads, as beat hands tasks to workers, and a long turn
never holds up the next tick.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from django.conf import settings
from django.core.cache import cache
from django.db import connections
from django_celery_beat.schedulers import DatabaseScheduler

from core.backends import backend

logger = logging.getLogger("skein.beat")

HEARTBEAT_KEY = "skein:beat:heartbeat"
HEARTBEAT_EVERY_S = 1.0
EMBEDDED_TASK_THREADS = 4


def heartbeat_record() -> None:
    """Beat is alive now; the mark lasts SKEIN_BEAT_STALE_S unless renewed."""
    try:
        cache.set(HEARTBEAT_KEY, time.time(), timeout=settings.SKEIN_BEAT_STALE_S)
    except Exception as exc:  # Redis away: beat goes on, and the web says schedules may not run
        logger.warning("beat heartbeat not recorded: %s: %s", type(exc).__name__, exc)


def schedules_status() -> dict:
    """``{running, message}``: whether a beat has ticked within SKEIN_BEAT_STALE_S, and what to do if not."""
    try:
        seen = cache.get(HEARTBEAT_KEY)
    except Exception:  # the cache (Redis) cannot be read: nothing says beat runs
        seen = None
    if seen is not None:
        return {"running": True, "message": ""}
    what_to_do = (
        "start `make beat` (or the beat service)" if backend().name == "full" else "start Skein with `make run` (its server fires them)"
    )
    return {"running": False, "message": f"schedules are not running: {what_to_do}"}


class Scheduler(DatabaseScheduler):
    """The database scheduler (periodic tasks in django-celery-beat's tables), with a heartbeat."""

    _last_heartbeat = 0.0

    def tick(self, *args, **kwargs):
        interval = super().tick(*args, **kwargs)
        now = time.monotonic()
        if now - self._last_heartbeat >= HEARTBEAT_EVERY_S:
            self._last_heartbeat = now
            heartbeat_record()
        return interval


_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _task_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(EMBEDDED_TASK_THREADS, thread_name_prefix="skein-beat-task")
        return _pool


class EmbeddedScheduler(Scheduler):
    """The embedded mode's scheduler: a due task runs in a pool thread (tasks are eager here)."""

    def apply_async(self, entry, producer=None, advance=True, **kwargs):
        entry = self.reserve(entry) if advance else entry
        task = self.app.tasks.get(entry.task)
        if task is None:
            logger.warning("beat: no task %s here; %s skipped", entry.task, entry.name)
            return None
        return submit(task.apply, kwargs={"args": list(entry.args or ()), "kwargs": dict(entry.kwargs or {})}, what=entry.name)


def submit(function, *, args=(), kwargs=None, what: str = ""):
    """Run ``function`` in the embedded pool; its errors are logged, and its database connections
    closed after it (the pool's threads outlive the task)."""

    def run():
        try:
            result = function(*args, **(kwargs or {}))
            if getattr(result, "traceback", None):  # an eager task's failure is kept in its result
                logger.error("%s failed:\n%s", what, result.traceback)
        except Exception:
            logger.exception("%s failed", what)
        finally:
            connections.close_all()

    return _task_pool().submit(run)
