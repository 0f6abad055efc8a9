"""The one module that pushes events to clients (docs/runs.md#events).

Events are ``{"type": ..., "data": {...}}``, sent to a run's group and its thread's group. Events
about stored state go out after the transaction commits; tokens go out at once. With
channels-redis every send goes through one long-lived event loop per process (a daemon thread):
its connection pools stay bound to that loop, which avoids "Event loop is closed" from Celery, and
tokens that pile up while a send is in flight are merged into one message (batching by
back-pressure, so no added latency).
"""

from __future__ import annotations

import asyncio
import logging
import threading

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

logger = logging.getLogger("skein.events")

RUN_STARTED = "run.started"
NODE_STARTED = "node.started"
LLM_TOKEN = "llm.token"
NODE_FINISHED = "node.finished"
MEMORY_SUMMARIZING = "memory.summarizing"
MEMORY_SUMMARIZED = "memory.summarized"
MEMORY_WARNING = "memory.warning"
MEMORY_FACTS = "memory.facts"  # a memory.facts extraction stored new or changed facts
TOOL_STARTED = "tool.started"  # {node: the tool node, agent: the llm node, tool, call_id}
TOOL_FINISHED = "tool.finished"  # and {status, duration_ms, error?}
RUN_FINISHED = "run.finished"
RUN_FAILED = "run.failed"
# Conversation tests (docs/runs.md#test-run-events), to the test run's own group.
TEST_STARTED = "test.started"
TEST_TURN = "test.turn"
TEST_FINISHED = "test.finished"
TEST_RUN_FINISHED = "test_run.finished"


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


def thread_group(thread_id: int) -> str:
    return f"thread-{thread_id}"


def conversation_test_run_group(test_run_id: int) -> str:
    return f"test-run-{test_run_id}"


def publish_test_run(event_type: str, data: dict, *, test_run_id: int) -> None:
    """A conversation test's progress, to its test run's group, after the current transaction commits."""
    message = {"type": "skein.event", "event": {"type": event_type, "data": {"test_run": test_run_id, **data}}}
    transaction.on_commit(lambda: _send([conversation_test_run_group(test_run_id)], message))


def publish(event_type: str, data: dict, *, run_id: int, thread_id: int | None = None, now: bool = False) -> None:
    """Send an event to the run's and the thread's groups, after the current transaction commits."""
    groups = [run_group(run_id)] + ([thread_group(thread_id)] if thread_id else [])
    message = {"type": "skein.event", "event": {"type": event_type, "data": {"run": run_id, **data}}}
    if now:
        _send(groups, message)
    else:
        transaction.on_commit(lambda: _send(groups, message))


def publish_token(*, run_id: int, thread_id: int | None, node: str, text: str) -> None:
    publish(LLM_TOKEN, {"node": node, "text": text}, run_id=run_id, thread_id=thread_id, now=True)


def _send(groups: list[str], message: dict) -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    try:
        if type(layer).__module__.startswith("channels_redis"):
            _LoopSender.for_layer(layer).put(groups, message)
        else:
            for group in groups:
                # The in-memory layer (embedded mode) lives in this process: skip groups nobody
                # listens to rather than spin up an event loop per event.
                if hasattr(layer, "groups") and not layer.groups.get(group):
                    continue
                async_to_sync(layer.group_send)(group, message)
    except (Exception, asyncio.CancelledError):  # a client that cannot be reached must never fail a turn
        logger.exception("could not send %s", message["event"]["type"])


class _LoopSender:
    _instance: _LoopSender | None = None
    _create_lock = threading.Lock()

    def __init__(self, layer):
        self.layer = layer
        self.loop = asyncio.new_event_loop()
        self.queue: asyncio.Queue | None = None
        ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(ready,), name="skein-events", daemon=True)
        self.thread.start()
        ready.wait()

    @classmethod
    def for_layer(cls, layer) -> _LoopSender:
        with cls._create_lock:
            if cls._instance is None or cls._instance.layer is not layer or not cls._instance.thread.is_alive():
                cls._instance = cls(layer)
            return cls._instance

    def put(self, groups: list[str], message: dict) -> None:
        self.loop.call_soon_threadsafe(self.queue.put_nowait, (groups, message))

    def _run(self, ready: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.queue = asyncio.Queue()
        ready.set()
        self.loop.run_until_complete(self._drain())

    async def _drain(self) -> None:
        while True:
            groups, message = await self.queue.get()
            message = self._merge_waiting_tokens(groups, message)
            for group in groups:
                try:
                    await self.layer.group_send(group, message)
                except Exception:
                    logger.exception("group_send to %s failed", group)

    def _merge_waiting_tokens(self, groups, message):
        event = message["event"]
        if event["type"] != LLM_TOKEN:
            return message
        text = event["data"]["text"]
        while not self.queue.empty():
            next_groups, next_message = self.queue._queue[0]  # peek: only same-node tokens merge
            next_event = next_message["event"]
            if next_event["type"] != LLM_TOKEN or next_groups != groups or next_event["data"]["node"] != event["data"]["node"]:
                break
            self.queue.get_nowait()
            text += next_event["data"]["text"]
        return {"type": "skein.event", "event": {"type": LLM_TOKEN, "data": {**event["data"], "text": text}}}
