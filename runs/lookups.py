"""The API's lookup of a thread, or a 404."""

from __future__ import annotations

from core.api import found_or_404
from runs import selectors


def thread_or_404(request, pk, *, workflow=None):
    """The requester's thread (of ``workflow``, when given)."""
    thread = selectors.thread_get(owner=request.user, thread_id=pk, **({"workflow": workflow} if workflow is not None else {}))
    return found_or_404(thread, "thread for this workflow" if workflow is not None else "thread")
