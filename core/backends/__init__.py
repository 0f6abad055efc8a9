"""The runtime mode as one backend, chosen once (like Django's cache backends).

Skein runs in one of two modes (docs/modes.md): *embedded*, one process where Celery is eager and
turns run inside the request that created them, and *full*, web processes, workers and beat
sharing state through Redis. What differs between them is a mechanism, never a rule, and each
mechanism lives here, once per mode: the lock a thread's turns take (``Backend.lock``), the signal
a finished run sends to whoever waits for it (``Backend.signals``), token buckets
(``Backend.bucket_take``), and where a turn runs (``Backend.turns_in_request``). The apps ask
``backend()``; nothing else reads the mode.
"""

from __future__ import annotations

import threading

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver
from django.utils.module_loading import import_string

from core.backends.base import Backend, Lock, Signals

__all__ = ["Backend", "Lock", "Signals", "backend"]

BACKENDS = {False: "core.backends.embedded.EmbeddedBackend", True: "core.backends.full.FullBackend"}

_chosen: Backend | None = None
_choosing = threading.Lock()


def backend() -> Backend:
    """This process's backend: the full mode's when ``REDIS_URL`` is set, else the embedded one."""
    global _chosen
    chosen = _chosen
    if chosen is None:
        with _choosing:
            if _chosen is None:
                _chosen = import_string(BACKENDS[bool(settings.FULL_MODE)])()
            chosen = _chosen
    return chosen


@receiver(setting_changed)
def _choose_again(setting, **kwargs):
    """A test that switches the mode (or moves Redis) gets the backend of the new settings."""
    global _chosen
    if setting in ("FULL_MODE", "REDIS_URL", "SKEIN_NAMESPACE"):
        with _choosing:
            if _chosen is not None:
                _chosen.close()
            _chosen = None
