"""The API's one lookup-or-404: an object its owner asked for, or a 404 naming what is missing
(another owner's object is missing too). Used by every API module (``workflows/api``,
``runs/api/memory.py``, ``conversation_tests/api.py``) on top of the selectors."""

from __future__ import annotations

from core.api import found_or_404
from workflows import selectors


def workflow_or_404(request, pk):
    return found_or_404(selectors.workflow_get(owner=request.user, workflow_id=pk), "workflow")
