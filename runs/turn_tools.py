"""The engine's ``ToolServices`` for one run: what its tools reach the world through (the owner's
secrets, guarded HTTP, MCP servers, the owner's other workflows), the trace of each call, and the
events that show it (``tool.started``, ``tool.finished``: visitors see the tool's name only).

Tools may run in threads of their own (a round of parallel calls): whatever here reads the
database hands that thread's connection back when it is done.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

from django.db import connection

from core.text import storable
from engine.interfaces import ModelRef, ToolCall, ToolOutcome, ToolSpec
from engine.registry import NodeError
from memory.tokens import cut_text
from runs import events
from tools import http, mcp
from tools import selectors as tool_selectors

# A workflow called as a tool runs on a thread of this pool, so that its caller can stop waiting
# at the tool's bound (the called turn finishes on its own and is recorded like any other).
_workflow_calls = ThreadPoolExecutor(max_workers=16, thread_name_prefix="skein-workflow-tool")


def _in_own_thread(function, *args, **kwargs):
    """Run ``function`` and hand back the database connection it opened, in a thread that is not
    the turn's (the turn's own connection is the turn's to manage)."""
    try:
        return function(*args, **kwargs)
    finally:
        connection.close()


class TurnTools:
    def __init__(self, runtime):
        self.runtime = runtime
        self.run = runtime.run
        self._owner_id = runtime.run.workflow.owner_id
        self._lock = threading.Lock()
        self._turn_thread = threading.get_ident()
        self._listed: dict[tuple, list[ToolSpec]] = {}

    def _read(self, function, *args, **kwargs):
        if threading.get_ident() == self._turn_thread:
            return function(*args, **kwargs)
        return _in_own_thread(function, *args, **kwargs)

    # --- what tools reach ---------------------------------------------------------------------------
    def secrets(self, names: list[str]) -> dict[str, str]:
        found = self._read(tool_selectors.secret_values, owner_id=self._owner_id, names=list(names))
        missing = [name for name in names if name not in found]
        if missing:
            raise NodeError(f"there is no secret named '{missing[0]}': add it on the Secrets page")
        return found

    def http(self, *, method: str, url: str, headers: dict, body: str | None, timeout: float, redact: list[str]) -> dict:
        return http.request(method=method, url=url, headers=headers, body=body, timeout=timeout, redact=redact)

    def mcp_tools(self, *, url: str, secret: str | None, timeout: float) -> list[ToolSpec]:
        key = (url, secret)
        if key not in self._listed:  # listed once a turn
            self._listed[key] = mcp.list_tools(url=url, secret=secret, timeout=timeout)
        return self._listed[key]

    def mcp_call(self, *, url: str, secret: str | None, name: str, arguments: dict, timeout: float) -> ToolOutcome:
        return mcp.call_tool(url=url, secret=secret, name=name, arguments=arguments, timeout=timeout)

    def workflow_call(self, *, node_id: str, workflow_id: int, message: str, timeout: float) -> ToolOutcome:
        if self.runtime.workflow_turn is None:
            raise NodeError("a workflow tool runs only within a turn")
        future = _workflow_calls.submit(
            _in_own_thread,
            self.runtime.workflow_turn,
            parent=self.run,
            tool_node=node_id,
            workflow_id=workflow_id,
            message=message,
            timeout=timeout,
        )
        try:
            run = future.result(timeout=timeout)
        except FutureTimeout:
            return ToolOutcome(content="", error=f"workflow {workflow_id} did not answer within {timeout:g} s")
        details = {"workflow": workflow_id, "run": run.pk, "thread": run.thread_id}
        if run.status != run.Status.SUCCEEDED:
            return ToolOutcome(content="", error=run.error or f"the run ended {run.status}", details=details)
        return ToolOutcome(content=run.output, details=details)

    def cut_to_tokens(self, ref: ModelRef | None, text: str, max_tokens: int) -> tuple[str, bool]:
        return cut_text(self._read(self.runtime.tokenizer_of, ref), text, max_tokens)

    # --- the trace and the events -------------------------------------------------------------------
    def started(self, node_id: str, tool_node: str | None, call: ToolCall) -> None:
        self.runtime.publish(events.TOOL_STARTED, {"node": tool_node, "agent": node_id, "tool": call.name, "call_id": call.id})

    def finished(self, node_id: str, tool_node: str | None, call: ToolCall, outcome: ToolOutcome, duration_ms: int) -> None:
        entry = {
            "id": call.id,
            "name": call.name,
            "arguments": storable(call.arguments),
            "tool_node": tool_node,
            "result": storable(outcome.content),
            "error": storable(outcome.error),
            "duration_ms": duration_ms,
            "details": outcome.details,
        }
        step = self.runtime.step_of(node_id)
        with self._lock:
            if step is not None and step.rounds:
                step.rounds[-1]["tool_calls"].append(entry)
        data = {"node": tool_node, "agent": node_id, "tool": call.name, "call_id": call.id, "duration_ms": duration_ms}
        data |= {"status": "failed", "error": outcome.error[:500]} if outcome.error else {"status": "succeeded"}
        self.runtime.publish(events.TOOL_FINISHED, data)
