"""Threads: created in one place (every chat surface: the API, the widget, the stream, the
OpenAI-compatible endpoint, conversation tests), renamed, and deleted with everything that holds
their words."""

from __future__ import annotations

from django.db import transaction

from core.errors import DomainError
from memory import services as memory_services
from runs.models import Run, Thread


class ThreadBusy(Exception):
    """A turn is queued or running on the thread."""


TITLE_CHARS = 80  # a thread's title is its first message, cut here


def thread_create(
    *,
    workflow,
    first_message: str = "",
    title: str | None = None,
    participant=None,
    widget_token: str | None = None,
    external_id: str | None = None,
) -> Thread:
    """A new thread of ``workflow``, owned by its owner, titled ``title`` or its first message (cut
    at ``TITLE_CHARS``); a widget visitor's has its ``widget_token``, a caller's its ``external_id``."""
    return Thread.objects.create(
        workflow=workflow,
        owner_id=workflow.owner_id,
        title=first_message[:TITLE_CHARS] if title is None else title,
        participant=participant,
        widget_token=widget_token,
        external_id=external_id,
    )


def thread_for_key(*, workflow, key: str, first_message: str = "", title: str | None = None, participant=None) -> tuple[Thread, bool]:
    """The thread a caller names by its own ``key`` (a webhook's ``thread``, ``X-Skein-Thread``),
    created with it if new (titled as ``thread_create`` titles); (thread, created)."""
    return Thread.objects.get_or_create(
        workflow=workflow,
        external_id=key,
        defaults={
            "owner_id": workflow.owner_id,
            "title": first_message[:TITLE_CHARS] if title is None else title,
            "participant": participant,
        },
    )


def thread_rename(*, thread: Thread, title: str) -> Thread:
    thread.title = title
    Thread.objects.filter(pk=thread.pk).update(title=title)
    return thread


def thread_delete(*, thread: Thread) -> None:
    """Delete the thread, its transcript, every memory keyed by it and its runs (their traces hold
    the same words). Refused (``ThreadBusy``) while one of its turns is queued or running."""
    with transaction.atomic():
        locked = Thread.objects.select_for_update().get(pk=thread.pk)
        if Run.objects.filter(thread=locked, status__in=[Run.Status.QUEUED, Run.Status.RUNNING]).exists():
            raise ThreadBusy("a turn is still running on this thread; delete it once that turn finished")
        memory_services.thread_memory_delete(workflow_id=locked.workflow_id, thread_id=locked.pk)
        Run.objects.filter(thread=locked).delete()
        locked.delete()


class ParticipantMismatch(DomainError):
    """The thread already belongs to another participant (HTTP 409)."""

    status = 409

    field = "participant"

    def __init__(self, code: str, message: str):
        super().__init__(message, code=code)


def thread_participant(*, thread: Thread | None, participant):
    """The participant of a turn on ``thread``: the one named, else the thread's. A thread that
    already belongs to someone else is refused (``ParticipantMismatch``); a thread with no
    participant yet takes the one named."""
    if thread is None:
        return participant
    if participant is None:
        return thread.participant if thread.participant_id else None
    if thread.participant_id and thread.participant_id != participant.pk:
        raise ParticipantMismatch("participant_mismatch", "this thread belongs to another participant")
    if not thread.participant_id and thread.pk:
        Thread.objects.filter(pk=thread.pk, participant__isnull=True).update(participant=participant)
        thread.participant = participant
    return participant
