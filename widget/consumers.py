"""WebSocket consumers (docs/api.md#websockets; protocol in docs/streaming.md).

- ``ThreadConsumer`` at ``ws/threads/<id>/`` and ``RunConsumer`` at ``ws/runs/<id>/``: a thread's
  (or a run's) events, unfiltered, for its owner only.
- ``WidgetConsumer`` at ``ws/widget/<public_key>/``: the embeddable widget's chat. Anonymous; the
  page's origin must be allowed; only the published version runs; a visitor sees what a visitor
  should (the reply's tokens, not intermediate models, internal errors or memory internals).

Each listens to one group (``events.publish`` sends each event to the run's group and the
thread's), so nothing arrives twice. Events are forwarded in the order the layer delivers them;
a consumer handles one message at a time, so that order is kept on the socket.
"""

from __future__ import annotations

import asyncio
import logging

from channels.db import database_sync_to_async

from core.clientaddr import scope_client
from core.origins import origin_allowed
from core.websocket import CLOSE_FORBIDDEN_ORIGIN, CLOSE_NOT_FOUND, CLOSE_NOT_PUBLISHED, BoundedJsonConsumer, RefusedFrame, header
from runs import events, limits, streams
from widget import selectors as widget_selectors
from widget import services as widget

logger = logging.getLogger("skein.realtime")


class WidgetConsumer(BoundedJsonConsumer):
    """The widget's chat. Client messages:

    - ``{"type": "message", "text": ..., "thread": <token>|null, "client_id": <string>}``
    - ``{"type": "sync", "thread": <token>|null, "after": <seq>}``: subscribe to that thread and get
      its ``history`` after that seq (sent on every (re)connect; ``thread: null`` leaves it)
    Both may say who the visitor is: ``visitor`` (the widget's anonymous id for this browser) or
    ``participant`` + ``signature`` (the embedding site's signed id, ``participants/services.py``).
    A thread of another participant does not exist for them.
    - ``{"type": "ping"}``

    Server messages: ``ready`` (theme defaults), ``thread.created``, ``accepted``
    (``{run, client_id, thread}``, always before that run's events), ``history``, the run events,
    ``error`` (``{code, message, retry_after?}``) and ``pong``.
    """

    async def connect(self):
        self.group = None
        self.token = None
        self.runs = streams.ConnectionRuns()  # the runs this visitor saw events of
        self.mine: set[str] = set()  # client ids this connection sent
        self.acknowledged: set[int] = set()
        self.tasks: set[asyncio.Task] = set()  # strong references: the loop keeps only weak ones
        self.closed = False
        key = self.scope["url_route"]["kwargs"]["public_key"]
        self.workflow = await database_sync_to_async(widget_selectors.workflow_by_key)(public_key=key)
        if self.workflow is None:
            await self.close(code=CLOSE_NOT_FOUND)
            return
        if not origin_allowed(workflow=self.workflow, origin=header(self.scope, b"origin")):
            logger.info("widget %s refused origin %r", key, header(self.scope, b"origin"))
            await self.close(code=CLOSE_FORBIDDEN_ORIGIN)
            return
        if self.workflow.published_version_id is None:
            await self.close(code=CLOSE_NOT_PUBLISHED)
            return
        self.client = scope_client(self.scope)
        await self.accept()
        await self.send_json({"type": "ready", "data": widget_selectors.widget_config(workflow=self.workflow)})

    async def disconnect(self, code):
        self.closed = True
        await self._subscribe(None)
        # Starts still in flight are left to finish: cancelling one would cancel the event send
        # its turn is blocked in (asgiref propagates the cancellation) and break the turn.

    # --- from the client ------------------------------------------------------------------------
    async def receive_json(self, content, **kwargs):
        if isinstance(content, RefusedFrame):
            await self._error("bad_request", f"{content}.")
            return
        if not isinstance(content, dict):
            await self._error("bad_request", "Send JSON objects.")
            return
        kind = content.get("type")
        if kind == "message":
            await self._message(content)
        elif kind == "sync":
            await self._resync(content.get("thread"), content.get("after"), content)
        elif kind == "ping":
            await self.send_json({"type": "pong", "data": {}})
        else:
            await self._error("bad_request", f"Unknown message type {kind!r}.")

    async def _message(self, content):
        text, token, client_id = content.get("text"), content.get("thread"), content.get("client_id")
        if not isinstance(text, str) or not isinstance(token, (str, type(None))) or not isinstance(client_id, (str, type(None))):
            await self._error("bad_request", "A message is {type: 'message', text: string, thread: string|null, client_id: string}.")
            return
        try:
            prepared = await database_sync_to_async(widget.widget_message_prepare)(
                workflow=self.workflow, text=text, token=token, client=self.client, client_id=client_id, identity=content
            )
        except widget.WidgetError as exc:
            await self._error(exc.code, exc.message, retry_after=exc.retry_after, client_id=client_id)
            return
        # Subscribe before the turn can run, so none of its events is missed.
        await self._subscribe(prepared.thread.widget_token, prepared.thread.pk)
        if prepared.created_thread:
            await self.send_json({"type": "thread.created", "data": {"thread": self.token}})
        if prepared.client_id:
            self.mine.add(prepared.client_id)
        task = asyncio.create_task(self._start(prepared))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def _start(self, prepared):
        start = database_sync_to_async(widget.widget_run_start, thread_sensitive=False, executor=streams.turn_executor)
        try:
            run = await start(workflow=self.workflow, prepared=prepared)
        except Exception:
            logger.exception("widget %s: could not start a turn", self.workflow.public_key)
            if not self.closed:
                await self._error("internal", "The message could not be sent; please try again.", client_id=prepared.client_id)
            return
        if not self.closed:
            await self._acknowledge(run.pk, prepared.client_id)

    async def _acknowledge(self, run_id: int, client_id: str | None):
        if run_id in self.acknowledged:
            return
        self.acknowledged.add(run_id)
        await self.send_json({"type": "accepted", "data": {"run": run_id, "client_id": client_id, "thread": self.token}})

    def _visitor_thread(self, token, frame):
        participant = widget.widget_identity(workflow=self.workflow, frame=frame)
        return widget_selectors.widget_thread(workflow=self.workflow, token=token, participant=participant)

    async def _resync(self, token, after, content=None):
        if token is not None and not isinstance(token, str):
            await self._error("bad_request", "thread must be a string or null.")
            return
        after = after if isinstance(after, int) and after >= 0 else 0
        if not token:
            await self._subscribe(None)
            await self.send_json({"type": "history", "data": {"thread": None, "messages": [], "pending": None}})
            return
        try:
            thread = await database_sync_to_async(self._visitor_thread)(token, content or {})
        except widget.WidgetError as exc:
            await self._subscribe(None)
            await self._error(exc.code, exc.message)
            return
        if thread is None:
            await self._subscribe(None)
            await self._error("unknown_thread", "This conversation no longer exists; start a new one.")
            return
        # Subscribe first, then read: whatever happens in between arrives twice (history and
        # event) rather than never; the widget merges by run and seq.
        await self._subscribe(token, thread.pk)
        history = await database_sync_to_async(widget_selectors.widget_history)(thread=thread, after=after)
        await self.send_json({"type": "history", "data": history})

    async def _subscribe(self, token: str | None, thread_id: int | None = None):
        group = events.thread_group(thread_id) if token else None
        if group == self.group:
            return
        if self.group:
            await self.channel_layer.group_discard(self.group, self.channel_name)
        self.group, self.token = group, token
        if group:
            await self.channel_layer.group_add(group, self.channel_name)

    async def _error(self, code: str, message: str, *, retry_after: float | None = None, client_id: str | None = None):
        data = {"code": code, "message": message}
        if retry_after is not None:
            data["retry_after"] = round(retry_after, 1)
        if client_id:
            data["client_id"] = client_id
        await self.send_json({"type": "error", "data": data})

    # --- from the channel layer -----------------------------------------------------------------
    async def skein_event(self, message):
        event = message["event"]
        run_id = event["data"].get("run")
        info = await self.runs.marks(run_id)
        if info.client_id in self.mine:
            await self._acknowledge(run_id, info.client_id)  # before the run's first event
        visible = _for_visitor(event, info, self.token)
        if visible is not None:
            await self.send_json(visible)


def _for_visitor(event: dict, info: streams.RunMarks, token: str | None) -> dict | None:
    """What of an event a visitor may see."""
    kind, data = event["type"], event["data"]
    run = data.get("run")
    if kind == events.RUN_STARTED:
        return {"type": kind, "data": {"run": run, "thread": token}}
    if kind == events.LLM_TOKEN:
        if data.get("node") not in info.reply_nodes:
            return None
        return {"type": kind, "data": {"run": run, "node": data["node"], "text": data["text"]}}
    if kind in (events.NODE_STARTED, events.NODE_FINISHED):
        return {"type": kind, "data": {k: data[k] for k in ("run", "node", "type", "status") if k in data}}
    if kind == events.RUN_FINISHED:
        return {"type": kind, "data": {"run": run, "reply": data.get("reply", ""), "cut": bool(data.get("cut"))}}
    if kind == events.RUN_FAILED:
        error = data.get("error", "")  # a spend-limit refusal is written for the visitor; other errors are the owner's
        shown = error if limits.is_refusal(error) else "Sorry, something went wrong while answering. Please try again."
        return {"type": kind, "data": {"run": run, "error": shown}}
    if kind in (events.TOOL_STARTED, events.TOOL_FINISHED):  # "looking up …": the tool's name, never its arguments or result
        return {"type": kind, "data": {k: data[k] for k in ("run", "tool", "call_id", "status") if k in data}}
    if kind == events.MEMORY_SUMMARIZING:  # "summarizing earlier messages…", with nothing internal
        return {"type": kind, "data": {"run": run}}
    if kind in (events.MEMORY_SUMMARIZED, events.MEMORY_WARNING):  # the cue ends either way
        return {"type": events.MEMORY_SUMMARIZED, "data": {"run": run}}
    return None  # anything new: internal until decided otherwise
