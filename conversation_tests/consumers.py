"""``ws/test-runs/<id>/``: a test run's progress as each turn and test finishes, for its owner."""

from __future__ import annotations

from conversation_tests import selectors
from core.websocket import OwnerConsumer
from runs import events


class TestRunConsumer(OwnerConsumer):
    __test__ = False  # not a pytest test class

    def subscription(self, user, object_id):
        return (
            events.conversation_test_run_group(object_id)
            if selectors.conversation_test_run_get(owner=user, test_run_id=object_id)
            else None
        )
