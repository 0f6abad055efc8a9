"""The embeddable chat widget: public keys, allowed origins, rate limits, visitor threads.

A workflow's ``public_key`` is public (it sits in the embedding page's HTML) and works once the
workflow is published: the widget always runs the *published* version. Visitors are anonymous, so
their threads belong to the workflow's owner and are found by an unguessable ``widget_token`` that
the widget keeps in the visitor's localStorage; thread ids never leave the server.

Sync functions (ORM, Redis): call them from consumers through ``database_sync_to_async``.
"""

from __future__ import annotations

import re
import secrets
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import lru_cache

from django.conf import settings
from django.db import transaction

from . import limits, mode, participants, runs
from .analysis import InvalidWorkflow, graph_issues
from .models import Message, Run, Thread, Workflow, new_public_key

# Starting a turn from async code (the widget socket, the SSE stream) runs in these threads: in the
# embedded mode the whole turn runs inside that call, and must not hold up other connections.
turn_executor = ThreadPoolExecutor(max_workers=16, thread_name_prefix="skein-turn")

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


def widget_identity(*, workflow: Workflow, frame: dict):
    """Who a widget frame says the visitor is (``participant`` + ``signature``, or ``visitor``),
    checked (``participants.widget_participant``); ``WidgetError`` when refused."""
    try:
        return participants.widget_participant(
            workflow=workflow, participant=frame.get("participant"), signature=frame.get("signature"), visitor=frame.get("visitor")
        )
    except participants.ParticipantInvalid as exc:
        raise WidgetError(exc.code, exc.message, status=403 if exc.code in ("unsigned_participant", "bad_signature") else 400) from None


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
        Run.objects.filter(thread=thread, status__in=[Run.Status.QUEUED, Run.Status.RUNNING]).order_by("id").values_list("id", flat=True).last()
    )
    return {"thread": thread.widget_token, "messages": messages, "pending": pending, "more": more}


def widget_config(*, workflow: Workflow) -> dict:
    """What the widget needs before it connects: the owner's theme defaults."""
    theme = dict(workflow.widget_theme or {})
    theme.setdefault("title", workflow.name)
    return {"key": workflow.public_key, "name": workflow.name, "theme": theme}


def reply_nodes(graph: dict) -> set[str]:
    """The ``llm`` nodes whose output goes straight to an ``output`` node: their tokens are the
    reply as it is written. A visitor sees only these; intermediate models stay private."""
    types = {n.get("id"): n.get("type") for n in (graph or {}).get("nodes", []) if isinstance(n, dict)}
    return {
        e.get("source")
        for e in (graph or {}).get("edges", [])
        if isinstance(e, dict) and types.get(e.get("source")) == "llm" and types.get(e.get("target")) == "output"
    }


# --- origins ------------------------------------------------------------------------------------
_ORIGIN = re.compile(r"^(https?)://(\*\.)?([a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*)(:(\d{1,5}))?$")
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def origin_normalize(value: str) -> str:
    """``scheme://host[:port]`` in lower case without a default port; ``ValueError`` otherwise.
    ``https://*.example.com`` allows every subdomain of example.com (not example.com itself)."""
    text = (value or "").strip().lower().rstrip("/")
    match = _ORIGIN.match(text)
    if not match:
        raise ValueError(f"'{value}' is not an origin: write scheme://host[:port], e.g. https://example.com")
    scheme, wildcard, host, port = match.group(1), match.group(2) or "", match.group(3), match.group(8)
    if port and int(port) > 65535:
        raise ValueError(f"'{value}' has an invalid port")
    if port == _DEFAULT_PORTS[scheme]:
        port = None
    return f"{scheme}://{wildcard}{host}" + (f":{port}" if port else "")


def origin_allowed(*, workflow: Workflow, origin: str | None) -> bool:
    """No list: any site may embed the widget. With a list, the page's origin must be on it (a
    client that sends no Origin, i.e. not a browser page, is refused too)."""
    allowed = workflow.allowed_origins or []
    if not allowed:
        return True
    try:
        origin = origin_normalize(origin or "")
    except ValueError:
        return False
    scheme, _, host = origin.partition("://")
    for entry in allowed:
        if entry == origin:
            return True
        if "://*." in entry:
            entry_scheme, _, pattern = entry.partition("://*.")
            host_only, _, port = host.partition(":")
            pattern_host, _, pattern_port = pattern.partition(":")
            if entry_scheme == scheme and port == pattern_port and host_only.endswith("." + pattern_host):
                return True
    return False


# --- rate limits --------------------------------------------------------------------------------
def _rate() -> tuple[float, float]:
    """(burst, messages per minute) per key and client."""
    return float(settings.SKEIN_WIDGET_BURST), float(settings.SKEIN_WIDGET_RATE_PER_MINUTE)


@dataclass
class _Bucket:
    tokens: float
    at: float


_local_buckets: dict[str, _Bucket] = {}
_local_lock = threading.Lock()

# KEYS[1] bucket; ARGV: burst, refill per second, now; returns {allowed, seconds until one token}
_BUCKET_LUA = """
local burst, rate, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens, at = tonumber(state[1]), tonumber(state[2])
if tokens == nil then tokens, at = burst, now end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local allowed = 0
if tokens >= 1 then tokens = tokens - 1; allowed = 1 end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('EXPIRE', KEYS[1], math.ceil(burst / rate) + 60)
return {allowed, tostring((1 - tokens) / rate)}
"""


@lru_cache(maxsize=1)
def _redis_script():
    import redis

    return redis.Redis.from_url(settings.REDIS_URL).register_script(_BUCKET_LUA)


def rate_limit_take(*, public_key: str, client: str) -> None:
    """Take one message from the (key, client) token bucket and one from the key's own budget
    (all its visitors together, ``SKEIN_WIDGET_KEY_RATE_PER_MINUTE``), or raise ``WidgetError`` (429).

    Shared through Redis in the full mode (every web process sees one bucket); per process in the
    embedded mode, which is one process."""
    burst, per_minute = _rate()
    _bucket_take(f"{settings.SKEIN_NAMESPACE}:widget-rate:{public_key}:{client}", burst, per_minute)
    key_rate = float(settings.SKEIN_WIDGET_KEY_RATE_PER_MINUTE)
    _bucket_take(f"{settings.SKEIN_NAMESPACE}:widget-key-rate:{public_key}", max(burst, key_rate / 6), key_rate)


def _bucket_take(name: str, burst: float, per_minute: float) -> None:
    if burst <= 0 or per_minute <= 0:
        return
    rate = per_minute / 60.0
    now = time.time()
    if mode.full():
        allowed, wait = _redis_script()(keys=[name], args=[burst, rate, now])
        allowed, wait = int(allowed), float(wait)
    else:
        with _local_lock:
            bucket = _local_buckets.get(name) or _Bucket(tokens=burst, at=now)
            bucket.tokens = min(burst, bucket.tokens + max(0.0, now - bucket.at) * rate)
            bucket.at = now
            allowed = bucket.tokens >= 1
            if allowed:
                bucket.tokens -= 1
            wait = (1 - bucket.tokens) / rate
            _local_buckets[name] = bucket
    if not allowed:
        raise WidgetError(
            "rate_limited", f"Too many messages; try again in {max(1, round(wait))} s.", status=429, retry_after=max(wait, 0.1)
        )


def rate_limit_reset() -> None:
    """Forget the process-local buckets (tests)."""
    with _local_lock:
        _local_buckets.clear()


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
    spender: str = ""  # the visitor, for daily spend limits (workflows/limits.py)
    participant: object = None  # who the visitor is (workflows/participants.py), or None


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
        thread = Thread.objects.create(
            workflow=workflow, owner_id=workflow.owner_id, title=text[:80], widget_token=secrets.token_urlsafe(24), participant=participant
        )
    return Prepared(
        thread=thread, text=text, client_id=client_id, created_thread=created, earlier_run=None, spender=limits.spender_visitor(client),
        participant=participant,
    )


def widget_run_start(*, workflow: Workflow, prepared: Prepared) -> Run:
    """Run the published version on the prepared thread (in the embedded mode: the whole turn)."""
    if prepared.earlier_run is not None:
        return prepared.earlier_run
    payload = {"source": "widget", **({"client_id": prepared.client_id} if prepared.client_id else {})}
    with transaction.atomic():
        return runs.run_create(
            version=workflow.published_version, trigger="chat", input_text=prepared.text, thread=prepared.thread, payload=payload,
            spender=prepared.spender, participant=prepared.participant,
        )


# --- the developers' streaming chat API (workflows/api/stream.py) -------------------------------
def stream_thread(*, workflow: Workflow, thread: Thread | None, message: str, participant=None) -> Thread:
    """The thread a streamed turn runs on: created first, so the stream can subscribe to it."""
    if thread is not None:
        return thread
    return Thread.objects.create(workflow=workflow, owner_id=workflow.owner_id, title=message[:80], participant=participant)


def stream_version(*, workflow: Workflow, version: str):
    """``draft`` (a snapshot of the current draft, as ``POST .../chat/`` runs) or ``published``."""
    if version == "published":
        if workflow.published_version is None:
            raise WidgetError("not_published", "This workflow is not published yet.", status=409)
        return workflow.published_version
    issues = graph_issues(graph=workflow.graph, owner=workflow.owner)
    if issues:
        raise InvalidWorkflow(issues)
    return runs.draft_snapshot(workflow=workflow)


def stream_run_start(*, version, thread: Thread, message: str, stream_id: str, payload: dict | None = None, **run_fields) -> Run:
    """Create the run (in the embedded mode: run the whole turn). ``stream_id`` in its payload lets
    the stream tell its run's events from those of other runs on the thread before this returns.
    ``run_fields`` go to ``runs.run_create`` (``spender``, ``trace_context``)."""
    with transaction.atomic():
        return runs.run_create(
            version=version, trigger="chat", input_text=message, thread=thread,
            payload={"source": "api", **(payload or {}), "stream": stream_id}, **run_fields,
        )


def run_marker(*, run_id: int) -> dict:
    """What ties a run to the connection that started it (its payload's ``client_id`` or
    ``stream``), and the nodes whose tokens are its reply."""
    run = Run.objects.filter(pk=run_id).select_related("version").only("payload", "version__graph").first()
    if run is None:
        return {"client_id": None, "stream": None, "reply_nodes": set()}
    payload = run.payload or {}
    return {"client_id": payload.get("client_id"), "stream": payload.get("stream"), "reply_nodes": reply_nodes(run.version.graph)}
