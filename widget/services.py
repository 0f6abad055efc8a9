"""The embeddable chat widget's writes: public keys, settings, a visitor's message and its turn
(reads are ``widget.selectors``', allowed origins ``core.origins``', rate limits
``widget.ratelimits``', the streaming of turns ``runs.streams``').

A workflow's ``public_key`` is public (it sits in the embedding page's HTML) and works once the
workflow is published: the widget always runs the *published* version. Visitors are anonymous, so
their threads belong to the workflow's owner and are found by an unguessable ``widget_token`` that
the widget keeps in the visitor's localStorage; thread ids never leave the server.

Sync functions (ORM, Redis): call them from consumers through ``database_sync_to_async``.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.db import transaction

from core.origins import origin_normalize
from participants import services as participants
from runs import limits, threads
from runs import services as runs
from runs.models import Run, Thread
from widget import ratelimits
from widget.selectors import widget_thread
from workflows.models import Workflow, new_public_key

MAX_MESSAGE_CHARS = 4000
# title, welcome, placeholder; colours (CSS): color (accent), text_color (on the accent), background;
# position ("right" or "left"); starters (questions offered before the first message).
THEME_KEYS = ("title", "welcome", "placeholder", "color", "text_color", "background", "position", "starters")
MAX_STARTERS = 6


class WidgetError(Exception):
    """A refusal the visitor should read: ``code`` is stable, ``message`` is for people."""

    def __init__(self, code: str, message: str, *, status: int = 400, retry_after: float | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.retry_after = retry_after


def widget_identity(*, workflow: Workflow, frame: dict):
    """Who a widget frame says the visitor is (``participant`` + ``signature``, or ``visitor``),
    checked (``participants.widget_participant``); ``WidgetError`` when refused."""
    try:
        return participants.widget_participant(
            workflow=workflow, participant=frame.get("participant"), signature=frame.get("signature"), visitor=frame.get("visitor")
        )
    except participants.ParticipantInvalid as exc:
        raise WidgetError(exc.code, exc.message, status=403 if exc.code in ("unsigned_participant", "bad_signature") else 400) from None


def rate_limit_take(*, public_key: str, client: str) -> None:
    """One message from the visitor's and the key's budgets (``ratelimits``), or ``WidgetError`` (429)."""
    try:
        ratelimits.rate_limit_take(public_key=public_key, client=client)
    except ratelimits.RateLimited as exc:
        raise WidgetError(exc.code, exc.message, status=429, retry_after=max(exc.wait, 0.1)) from None


# --- services -----------------------------------------------------------------------------------
def widget_key_rotate(*, workflow: Workflow) -> Workflow:
    """A new public key: pages embedding the old one stop working. Threads stay."""
    workflow.public_key = new_public_key()
    Workflow.objects.filter(pk=workflow.pk).update(public_key=workflow.public_key)
    return workflow


def widget_settings_update(*, workflow: Workflow, allowed_origins: list[str] | None = None, theme: dict | None = None) -> Workflow:
    fields = []
    if allowed_origins is not None:
        workflow.allowed_origins = sorted({origin_normalize(o) for o in allowed_origins})
        fields.append("allowed_origins")
    if theme is not None:
        workflow.widget_theme = theme_clean(theme)
        fields.append("widget_theme")
    if fields:
        Workflow.objects.filter(pk=workflow.pk).update(**{f: getattr(workflow, f) for f in fields})
    return workflow


def theme_clean(theme: dict) -> dict:
    """Known keys with a value (the API validated their types and lengths)."""
    return {key: theme[key] for key in THEME_KEYS if theme.get(key) not in (None, "", [])}


@dataclass
class Prepared:
    thread: Thread
    text: str
    client_id: str | None
    created_thread: bool
    earlier_run: Run | None  # this client_id already ran: acknowledge it, run nothing
    spender: str = ""  # the visitor, for daily spend limits (runs/limits.py)
    participant: object = None  # who the visitor is (participants/services.py), or None


def widget_message_prepare(
    *, workflow: Workflow, text: str, token: str | None, client: str, client_id: str | None = None, identity: dict | None = None
) -> Prepared:
    """Check a visitor's message and find (or create, with a fresh token) its thread.

    Two steps, so the caller can subscribe to the thread's events before its turn runs (in the
    embedded mode the turn runs inside ``widget_run_start``). Idempotent per ``client_id``: a widget
    that resends a message after a dropped connection is told about the run its first attempt
    created, and nothing runs twice."""
    version = workflow.published_version
    if version is None:
        raise WidgetError("not_published", "This chatbot is not published yet.", status=409)
    if not any(isinstance(n, dict) and n.get("type") == "trigger.chat" for n in version.graph.get("nodes", [])):
        raise WidgetError("no_chat_trigger", "This workflow has no chat trigger.", status=409)
    text = (text or "").strip()
    if not text:
        raise WidgetError("empty", "Type a message first.")
    if "\x00" in text:  # no database stores NUL; the API refuses it the same way
        raise WidgetError("bad_request", "NUL characters (\\u0000) are not allowed.")
    if len(text) > MAX_MESSAGE_CHARS:
        raise WidgetError("too_long", f"Messages are limited to {MAX_MESSAGE_CHARS} characters.", status=413)
    client_id = (client_id or "")[:64] or None
    participant = widget_identity(workflow=workflow, frame=identity or {})
    thread = None
    if token:
        thread = widget_thread(workflow=workflow, token=token, participant=participant)
        if thread is None:
            raise WidgetError("unknown_thread", "This conversation no longer exists; start a new one.", status=404)
        if client_id:
            earlier = Run.objects.filter(thread=thread, payload__client_id=client_id).first()
            if earlier is not None:
                return Prepared(thread=thread, text=text, client_id=client_id, created_thread=False, earlier_run=earlier)
    rate_limit_take(public_key=workflow.public_key, client=client)
    created = thread is None
    if created:
        thread = threads.thread_create(
            workflow=workflow, first_message=text, widget_token=secrets.token_urlsafe(24), participant=participant
        )
    return Prepared(
        thread=thread,
        text=text,
        client_id=client_id,
        created_thread=created,
        earlier_run=None,
        spender=limits.spender_visitor(client),
        participant=participant,
    )


def widget_run_start(*, workflow: Workflow, prepared: Prepared) -> Run:
    """Run the published version on the prepared thread (in the embedded mode: the whole turn)."""
    if prepared.earlier_run is not None:
        return prepared.earlier_run
    payload = {"source": "widget", **({"client_id": prepared.client_id} if prepared.client_id else {})}
    with transaction.atomic():
        return runs.run_create(
            version=workflow.published_version,
            trigger="chat",
            input_text=prepared.text,
            thread=prepared.thread,
            payload=payload,
            spender=prepared.spender,
            participant=prepared.participant,
        )
