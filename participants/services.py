"""Who is talking: participant ids on runs and threads (docs/participants.md#who-the-participant-is, key ``participant``).

A participant is named by the caller: the chat API's and a webhook payload's ``participant``, the
OpenAI endpoint's ``user`` (those callers hold the owner's token or the webhook's secret URL, so
their word is taken), or a widget visitor. A visitor is anonymous by default (``visitor:`` and a
random id the widget keeps per browser); the embedding site can name its logged-in user with
``data-participant`` and ``data-participant-signature``, the HMAC-SHA256 of the id keyed by the
workflow's identity secret (shown in the Share panel). An unsigned or wrongly signed id is refused,
so one visitor cannot claim another's memory.

Participants belong to the workflow's owner; a thread has at most one, and a run on it carries it.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core import crypto
from core.errors import DomainError
from memory import services as memory_services
from memory.keys import thread_key
from participants.models import Participant
from runs.models import Run, Thread
from workflows.models import Workflow

MAX_PARTICIPANT_CHARS = 200
VISITOR_PREFIX = "visitor:"
_VISITOR_ID = re.compile(r"^[A-Za-z0-9_-]{16,64}$")
MAX_SIGNATURE_CHARS = 128


class ParticipantInvalid(DomainError, ValueError):
    """A participant id that cannot be used: ``code`` is stable, the message says what is wrong."""

    field = "participant"

    def __init__(self, code: str, message: str):
        super().__init__(message, code=code)


def participant_check(value, *, field: str = "participant") -> str:
    """The id as given, or ``ParticipantInvalid``: a string of 1 to 200 printable characters."""
    if not isinstance(value, str):
        raise ParticipantInvalid("bad_participant", f"'{field}' must be a string")
    if not value.strip():
        raise ParticipantInvalid("bad_participant", f"'{field}' must not be empty")
    if len(value) > MAX_PARTICIPANT_CHARS:
        raise ParticipantInvalid("bad_participant", f"'{field}' must be at most {MAX_PARTICIPANT_CHARS} characters")
    if not value.isprintable():
        raise ParticipantInvalid("bad_participant", f"'{field}' must not contain control characters")
    return value


def participant_get_or_create(*, owner_id: int, external_id: str) -> Participant:
    external_id = participant_check(external_id)
    participant, created = Participant.objects.get_or_create(owner_id=owner_id, external_id=external_id)
    if not created:
        Participant.objects.filter(pk=participant.pk).update(last_seen=timezone.now())
    return participant


def participant_for_call(*, workflow: Workflow, value) -> Participant | None:
    """The participant a trusted caller names (None for none); ``ParticipantInvalid`` if malformed."""
    if value is None or value == "":
        return None
    return participant_get_or_create(owner_id=workflow.owner_id, external_id=participant_check(value))


# --- the widget's signed identity ---------------------------------------------------------------
def identity_secret(*, workflow: Workflow) -> str:
    """The workflow's identity secret, made on first use (one winner when two ask at once)."""
    if workflow.identity_secret_encrypted:
        return crypto.decrypt(workflow.identity_secret_encrypted)
    with transaction.atomic():
        locked = Workflow.objects.select_for_update().only("identity_secret_encrypted").get(pk=workflow.pk)
        if not locked.identity_secret_encrypted:
            locked.identity_secret_encrypted = crypto.encrypt("wid_" + secrets.token_urlsafe(32))
            Workflow.objects.filter(pk=workflow.pk).update(identity_secret_encrypted=locked.identity_secret_encrypted)
    workflow.identity_secret_encrypted = locked.identity_secret_encrypted
    return crypto.decrypt(locked.identity_secret_encrypted)


def identity_secret_rotate(*, workflow: Workflow) -> str:
    """A new identity secret: ids signed with the old one are refused from now on."""
    workflow.identity_secret_encrypted = crypto.encrypt("wid_" + secrets.token_urlsafe(32))
    Workflow.objects.filter(pk=workflow.pk).update(identity_secret_encrypted=workflow.identity_secret_encrypted)
    return crypto.decrypt(workflow.identity_secret_encrypted)


def identity_sign(secret: str, participant: str) -> str:
    """What the embedding site computes on its server: hex HMAC-SHA256 of the id, keyed by the secret."""
    return hmac.new(secret.encode(), participant.encode(), hashlib.sha256).hexdigest()


def widget_participant(*, workflow: Workflow, participant, signature, visitor) -> Participant | None:
    """The participant of a widget message: the site's signed id, else the anonymous visitor's id,
    else None. ``ParticipantInvalid`` for an unsigned, wrongly signed or malformed id."""
    if participant not in (None, ""):
        external_id = participant_check(participant)
        if signature in (None, ""):
            raise ParticipantInvalid(
                "unsigned_participant",
                "data-participant needs data-participant-signature (HMAC-SHA256 of the id with the widget's identity secret)",
            )
        if not isinstance(signature, str) or len(signature) > MAX_SIGNATURE_CHARS:
            raise ParticipantInvalid("bad_signature", "the participant's signature is not valid")
        expected = identity_sign(identity_secret(workflow=workflow), external_id)
        if not hmac.compare_digest(expected, signature.strip().lower()):
            raise ParticipantInvalid("bad_signature", "the participant's signature is not valid")
        return participant_get_or_create(owner_id=workflow.owner_id, external_id=external_id)
    if visitor not in (None, ""):
        if not isinstance(visitor, str) or not _VISITOR_ID.match(visitor):
            raise ParticipantInvalid("bad_visitor", "the visitor id must be 16 to 64 letters, digits, '-' or '_'")
        return participant_get_or_create(owner_id=workflow.owner_id, external_id=VISITOR_PREFIX + visitor)
    return None


# --- the owner's view ---------------------------------------------------------------------------
class ParticipantBusy(Exception):
    """A turn of the participant is queued or running."""


def participant_delete(*, participant: Participant) -> None:
    """Forget a participant (a right-to-be-forgotten request), in one transaction: their threads
    with the transcripts, every memory kept by those threads, by their runs or under them (in
    every workflow), their facts and the extraction requests, and their runs with the runs'
    stored inputs, outputs and traces. Refused (``ParticipantBusy``) while one of their turns runs."""
    with transaction.atomic():
        locked = Participant.objects.select_for_update().get(pk=participant.pk)
        threads = list(Thread.objects.select_for_update().filter(participant=locked).values_list("pk", "workflow_id"))
        thread_ids = [pk for pk, _ in threads]
        runs = Run.objects.filter(Q(thread_id__in=thread_ids) | Q(participant_id=locked.pk))
        if runs.filter(status__in=[Run.Status.QUEUED, Run.Status.RUNNING]).exists():
            raise ParticipantBusy("a turn of this participant is still running; try again once it finished")
        run_ids = list(runs.values_list("pk", flat=True))
        keys = [thread_key(pk) for pk in thread_ids] + [f"run:{pk}" for pk in run_ids]
        workflow_ids = sorted({wf for _, wf in threads} | set(runs.values_list("workflow_id", flat=True)))
        memory_services.keyed_memory_delete(keys=keys, workflow_ids=workflow_ids)
        memory_services.participant_memory_delete(participant_id=locked.pk)
        Run.objects.filter(pk__in=run_ids).delete()
        Thread.objects.filter(pk__in=thread_ids).delete()
        locked.delete()
