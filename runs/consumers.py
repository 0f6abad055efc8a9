"""The owner's WebSockets of a thread's and a run's events (``ws/threads/<id>/``, ``ws/runs/<id>/``)."""

from __future__ import annotations

from core.websocket import OwnerConsumer
from runs import events, selectors


class ThreadConsumer(OwnerConsumer):
    """``ws/threads/<id>/``: every run on the thread."""

    def subscription(self, user, object_id):
        return events.thread_group(object_id) if selectors.thread_get(owner=user, thread_id=object_id) else None


class RunConsumer(OwnerConsumer):
    """``ws/runs/<id>/``: one run, also one without a thread (manual, webhook, schedule)."""

    def subscription(self, user, object_id):
        return events.run_group(object_id) if selectors.run_get(owner=user, run_id=object_id) else None
