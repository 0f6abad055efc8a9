"""The one place a history's key is made (docs/memory.md#what-a-history-is-keyed-by, "what a history is keyed by")."""

from __future__ import annotations

from memory.spec import PARTICIPANT, RUN, THREAD


def history_key(scope: str, *, thread_id: int | None, run_id: int | None, participant_id: int | None = None) -> str:
    """``participant:<id>`` for participant-keyed memory of a run with a participant;
    ``thread:<id>`` for thread-keyed memory on a thread (and participant-keyed memory of a run
    with no participant); runs with no thread (webhook, schedule, manual) and run-keyed memory
    bind it to ``run:<id>``."""
    if scope == PARTICIPANT and participant_id:
        return participant_key(participant_id)
    if scope != RUN and thread_id:
        return f"thread:{thread_id}"
    return f"run:{run_id}"


def falls_back(scope: str, *, participant_id: int | None) -> bool:
    """A participant-keyed memory on a run with no participant: kept by the thread (or run) instead."""
    return scope == PARTICIPANT and not participant_id


def thread_key(thread_id: int) -> str:
    return history_key(THREAD, thread_id=thread_id, run_id=None)


def participant_key(participant_id: int) -> str:
    return f"participant:{participant_id}"
