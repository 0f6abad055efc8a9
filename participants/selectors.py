"""Reads of participants, scoped to their owner."""

from __future__ import annotations

from django.db.models import Q, QuerySet

from runs.models import Thread


def participant_list(*, owner, workflow=None, search: str | None = None):
    """The owner's participants, most recently seen first, with how many threads each has."""
    from django.db.models import Count

    from participants.models import Participant

    query = Participant.objects.filter(owner=owner)
    if workflow:
        query = query.filter(Q(threads__workflow_id=workflow) | Q(runs__workflow_id=workflow)).distinct()
    if search:
        query = query.filter(external_id__icontains=search)
    return query.annotate(thread_count=Count("threads", distinct=True)).order_by("-last_seen", "-id")


def participant_get(*, owner, participant_id):
    from participants.models import Participant

    return Participant.objects.filter(owner=owner, pk=participant_id).first()


def participant_threads(*, participant) -> QuerySet[Thread]:
    return Thread.objects.filter(participant=participant).select_related("workflow").order_by("-updated", "-id")
