"""The embedded mode's server (``make run``: ``daphne config.embedded:application``).

Skein's ASGI application, and what the full mode's beat does, in this one process. At start it
re-runs the turns a crash interrupted (runs left queued or running by a process that was killed:
nothing else executes them in this mode) and then keeps django-celery-beat's scheduler ticking in
a background thread, so published schedules fire and the periodic turn recovery runs with nothing
else started.
"""

from __future__ import annotations

import logging
import threading
import time

from django.utils import timezone

from config.asgi import application  # noqa: F401  (what daphne serves; it sets Django up first)
from core.backends import backend
from triggers import beat

logger = logging.getLogger("skein.embedded")

RESTART_DELAY_S = 5.0
_started = threading.Event()


def start() -> None:
    """Recover interrupted turns, then fire schedules, in this process (once; embedded mode only)."""
    if backend().name == "full":
        logger.warning("REDIS_URL is set (full mode): schedules need `make beat` and turns a worker")
        return
    if _started.is_set():
        return
    _started.set()
    beat.submit(_recover_interrupted, args=(timezone.now(),), what="recovering interrupted turns")
    threading.Thread(target=_run_beat, name="skein-beat", daemon=True).start()


def _recover_interrupted(started_at) -> None:
    """Every run that was unfinished when this process started was interrupted: nothing else runs
    turns in the embedded mode. Each is run again, once, as the periodic recovery would."""
    from runs import services

    recovered = services.turns_recover(older_than_s=max(0.0, (timezone.now() - started_at).total_seconds()))
    if recovered:
        logger.warning("recovered %d turn(s) interrupted before this start: %s", len(recovered), recovered)


def _run_beat() -> None:
    from celery.beat import Service

    from config.celery import app

    app.set_current()
    app.loader.import_default_modules()  # every app's tasks module (autodiscovery), as a worker does: beat runs them by name here
    while True:
        try:
            Service(app, scheduler_cls=beat.EmbeddedScheduler, max_interval=5).start()
            return
        except Exception:  # the scheduler must outlive a bad moment (the database locked, say)
            logger.exception("the scheduler stopped; starting it again in %.0f s", RESTART_DELAY_S)
            time.sleep(RESTART_DELAY_S)


start()
