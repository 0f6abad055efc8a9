"""Threads as objects the owner manages: rename, and delete with everything that holds their words."""

from __future__ import annotations

from django.db import transaction

from memory import services as memory_services

from .models import Run, Thread


class ThreadBusy(Exception):
    """A turn is queued or running on the thread."""


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
