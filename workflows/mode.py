"""The runtime mode, asked in one place (DESIGN.md §2). ``settings.FULL_MODE`` is REDIS_URL set.

- *embedded*: one process; Celery is eager, so a turn runs inside the request (or thread) that
  created its run, and finished runs, rate limits and schedules stay in the process;
- *full*: web processes, workers and beat share run signals, rate limits and the broker through
  Redis, any of which may be down for a moment.

Modules ask the question they depend on (``turns_in_request``) or, for what people are told and
for the shared state, ``full``; nothing else reads the setting.
"""

from __future__ import annotations

from django.conf import settings


def full() -> bool:
    """Several processes sharing state through Redis (REDIS_URL set)."""
    return settings.FULL_MODE


def turns_in_request() -> bool:
    """A turn runs in the process that created its run, before that call returns (eager Celery)."""
    return not settings.FULL_MODE
