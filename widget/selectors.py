"""Reads of the widget: a workflow by its public key, a visitor's thread, its transcript in frames,
the widget's configuration."""

from __future__ import annotations

from runs.models import Message, Run, Thread
from workflows.models import Workflow


# --- selectors ----------------------------------------------------------------------------------
def workflow_by_key(*, public_key: str) -> Workflow | None:
    if not public_key or len(public_key) > 64:
        return None
    return Workflow.objects.filter(public_key=public_key).select_related("published_version").first()


def widget_thread(*, workflow: Workflow, token: str | None, participant=None) -> Thread | None:
    """The visitor's thread of ``token``; a thread of another participant (``participant``: who
    this visitor is, or None for no one) does not exist for them."""
    if not token or len(token) > 64:
        return None
    thread = Thread.objects.filter(workflow=workflow, widget_token=token).first()
    if thread is not None and thread.participant_id and thread.participant_id != getattr(participant, "pk", None):
        return None
    return thread


# A history frame stays well under daphne's 1 MiB WebSocket frame: a page holds at most this many
# messages and bytes of JSON (as sent: non-ASCII is escaped), and says when more follow.
HISTORY_PAGE_MESSAGES = 100


HISTORY_PAGE_BYTES = 800 * 1024


def _history_item(message: Message) -> dict:
    item = {"seq": message.seq, "role": message.role, "content": message.content, "run": message.run_id}
    if message.role == Message.Role.USER and message.run_id:
        item["client_id"] = (message.run.payload or {}).get("client_id")
    return item


def widget_history(*, thread: Thread, after: int = 0) -> dict:
    """One page of the transcript after ``after`` (a seq), and the run still in progress, if any.
    ``more`` says that messages follow: the widget asks again after the last seq it got.

    Each user message carries the ``client_id`` its widget sent it with, so a widget that lost its
    connection before the server acknowledged a message can tell that it arrived."""
    import json

    rows = Message.objects.filter(thread=thread, seq__gt=max(0, after)).select_related("run").order_by("seq")
    messages, size, more = [], 0, False
    for message in rows[: HISTORY_PAGE_MESSAGES + 1]:
        if len(messages) == HISTORY_PAGE_MESSAGES:
            more = True
            break
        item = _history_item(message)
        item_size = len(json.dumps(item))
        if messages and size + item_size > HISTORY_PAGE_BYTES:
            more = True
            break
        if item_size > HISTORY_PAGE_BYTES:  # one message too large for a frame: its beginning
            item["content"] = item["content"][: HISTORY_PAGE_BYTES // 12]
            item["truncated"] = True
            item_size = len(json.dumps(item))
        messages.append(item)
        size += item_size
    pending = (
        Run.objects.filter(thread=thread, status__in=[Run.Status.QUEUED, Run.Status.RUNNING])
        .order_by("id")
        .values_list("id", flat=True)
        .last()
    )
    return {"thread": thread.widget_token, "messages": messages, "pending": pending, "more": more}


def widget_config(*, workflow: Workflow) -> dict:
    """What the widget needs before it connects: the owner's theme defaults."""
    theme = dict(workflow.widget_theme or {})
    theme.setdefault("title", workflow.name)
    return {"key": workflow.public_key, "name": workflow.name, "theme": theme}
