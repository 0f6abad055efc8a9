"""``ws/test-runs/<id>/``: a test run's progress as each turn and test finishes, for its owner."""

from __future__ import annotations

from workflows import events
from workflows.consumers import OwnerConsumer

from . import selectors


class TestRunConsumer(OwnerConsumer):
    __test__ = False  # not a pytest test class

    def subscription(self, user, object_id):
        return events.test_run_group(object_id) if selectors.test_run_get(owner=user, test_run_id=object_id) else None
