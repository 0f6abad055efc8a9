"""The API's one lookup-or-404: an object its owner asked for, or a 404 naming what is missing
(another owner's object is missing too). Used by every API module (``workflows/api``,
``memory/api.py``, ``conversation_tests/api.py``) on top of the selectors."""

from __future__ import annotations

from typing import TypeVar

from rest_framework.exceptions import NotFound

from . import selectors

T = TypeVar("T")


def found_or_404(found: T | None, what: str) -> T:
    if found is None:
        raise NotFound(f"no such {what}")
    return found


def workflow_or_404(request, pk):
    return found_or_404(selectors.workflow_get(owner=request.user, workflow_id=pk), "workflow")


def thread_or_404(request, pk, *, workflow=None):
    """The requester's thread (of ``workflow``, when given)."""
    thread = selectors.thread_get(owner=request.user, thread_id=pk, **({"workflow": workflow} if workflow is not None else {}))
    return found_or_404(thread, "thread for this workflow" if workflow is not None else "thread")
