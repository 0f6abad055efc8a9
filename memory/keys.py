"""The one place a history's key is made (DESIGN.md §4, "what a history is keyed by")."""

from __future__ import annotations

from .spec import RUN, THREAD


def history_key(scope: str, *, thread_id: int | None, run_id: int | None) -> str:
    """``thread:<id>`` for thread-keyed memory on a thread; runs with no thread (webhook, schedule,
    manual) and run-keyed memory bind it to ``run:<id>``."""
    if scope != RUN and thread_id:
        return f"thread:{thread_id}"
    return f"run:{run_id}"


def thread_key(thread_id: int) -> str:
    return history_key(THREAD, thread_id=thread_id, run_id=None)
