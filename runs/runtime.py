"""The engine's ``RunServices`` for one run: model calls through litellm, steps, warnings, events,
and what tools reach the world through (``TurnTools``)."""

from __future__ import annotations

import logging
import threading

from django.db import connection
from django.utils import timezone

from core.text import storable, storable_json
from engine.interfaces import LLMResult, ModelRef
from engine.registry import NodeError
from memory import tokens
from memory.runtime import MemoryRuntime
from memory.tokens import Tokenizer
from observability import tracing as telemetry
from providers import llm
from providers.models import Provider
from runs import events
from runs.models import Run, RunStep
from runs.turn_tools import TurnTools

logger = logging.getLogger("skein.runs")


def _connection_hand_back() -> None:
    """Close this thread's PostgreSQL connection unless a transaction is open (with the full
    mode's pool, closing returns it to the pool). SQLite's (embedded, one process) is kept."""
    if connection.vendor == "postgresql" and not connection.in_atomic_block:
        connection.close()


def sent_message(message: dict) -> dict:
    """A message as a step records it: its role and content, and a tool round's own fields."""
    recorded = {"role": message["role"], "content": storable(message["content"]) if message.get("content") is not None else None}
    if message.get("tool_calls"):
        recorded["tool_calls"] = message["tool_calls"]
    if message.get("tool_call_id"):
        recorded["tool_call_id"] = message["tool_call_id"]
    return recorded


class TurnRuntime:
    def __init__(self, run: Run, *, workflow_turn=None):
        self.run = run
        # How a workflow tool's call runs another workflow's turn (``turns.workflow_tool_turn``).
        self.workflow_turn = workflow_turn
        self.payload = run.payload or {}
        self.warnings: list[dict] = list(run.warnings or [])
        self._position = 0
        self._steps: dict[str, RunStep] = {}
        self._providers: dict[int, Provider] = {}
        self._usage_lock = threading.Lock()
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self.cost = 0.0
        self.trace = telemetry.RunTrace(run)
        self.memory = MemoryRuntime(
            workflow_id=run.workflow_id,
            run_id=run.id,
            thread_id=run.thread_id,
            participant_id=run.participant_id,
            bind_model=self.bind_model,
            tokenizer_of=self.tokenizer_of,
            warn=self.warn,
            notify=self.publish,
        )
        self.tools = TurnTools(self)

    # --- models ---------------------------------------------------------------------------------
    def _provider(self, provider_id: int | None) -> Provider | None:
        if provider_id is None:
            return None
        if provider_id not in self._providers:
            provider = Provider.objects.filter(pk=provider_id, owner_id=self.run.workflow.owner_id).first()
            if provider is None:
                raise NodeError(f"provider {provider_id} does not exist (or belongs to someone else)")
            self._providers[provider_id] = provider
        return self._providers[provider_id]

    def bind_model(self, node_id: str, ref: ModelRef, *, stream: bool = True):
        """Resolve the provider now; the returned call touches no database (safe in any thread).

        Every model call is bound right before it is made (a node's ``call_model``, memory's
        summarizer): the turn hands its database connection back here, so a turn waiting on a
        model holds none (the pool lends it to another turn; the next query takes one again)."""
        provider = self._provider(ref.provider)
        on_token = self._token_sender(node_id) if stream else None
        _connection_hand_back()

        def call(messages: list[dict], *, deadline: float | None = None, tools=None, tool_choice=None) -> LLMResult:
            with self.trace.model_call(node_id, ref, provider) as record:
                result = llm.complete(ref, provider, messages, on_token=on_token, deadline=deadline, tools=tools, tool_choice=tool_choice)
                record(result)
            with self._usage_lock:
                self.prompt_tokens += result.prompt_tokens
                self.completion_tokens += result.completion_tokens
                self.cost += result.cost
            return result

        return call

    def tokenizer_of(self, ref: ModelRef | None) -> Tokenizer:
        """The tokenizer of the model ``ref`` names (its provider's kind decides how it is called)."""
        if ref is None:
            return tokens.default_tokenizer()
        provider = self._provider(ref.provider)
        return tokens.tokenizer_for(ref.model, provider.kind if provider else None)

    def call_model(self, node_id: str, ref: ModelRef, messages: list[dict], *, tools=None, tool_choice=None) -> LLMResult:
        """The running node's model call; its step records exactly what was sent, before sending.
        A node that calls tools makes one call a round: each is a round of its step's trace."""
        step = self._steps.get(node_id)
        sent = [sent_message(m) for m in messages]
        offered = [spec.as_openai() for spec in tools] if tools else None
        if step is not None:
            if step.messages is None:
                step.messages = sent
            if offered is not None:
                step.rounds = [*(step.rounds or []), {"messages": sent, "tools": offered, "tool_choice": tool_choice, "tool_calls": []}]
        return self.bind_model(node_id, ref)(messages, tools=offered, tool_choice=tool_choice)

    def _token_sender(self, node_id: str):
        run_id, thread_id = self.run.id, self.run.thread_id

        def send(text: str) -> None:
            events.publish_token(run_id=run_id, thread_id=thread_id, node=node_id, text=text)

        return send

    # --- steps ----------------------------------------------------------------------------------
    # Steps are kept here and written in one insert by the run's final transaction (``steps_save``):
    # a turn then commits three times, not twice per node. While it runs, its events show progress.
    def node_started(self, node_id: str, node_type: str, input_text: str) -> None:
        self._position += 1
        self._steps[node_id] = RunStep(
            run_id=self.run.pk,
            node=node_id,
            type=node_type,
            position=self._position,
            status=RunStep.Status.RUNNING,
            input=storable(input_text),
            started=timezone.now(),
        )
        self.trace.node_started(node_id, node_type)
        self.publish(events.NODE_STARTED, {"node": node_id, "type": node_type})

    def node_finished(self, node_id: str, node_type: str, output_text: str, details: dict, duration_ms: int) -> None:
        self._step_end(node_id, RunStep.Status.SUCCEEDED, duration_ms, output=storable(output_text), details=storable_json(details))
        self.trace.node_ended(node_id, "succeeded")
        self.publish(
            events.NODE_FINISHED,
            {
                "node": node_id,
                "type": node_type,
                "status": "succeeded",
                "duration_ms": duration_ms,
                "output": output_text[:2000],
                "details": details,
            },
        )

    def node_failed(self, node_id: str, node_type: str, error: str, duration_ms: int) -> None:
        self._step_end(node_id, RunStep.Status.FAILED, duration_ms, error=storable(error))
        self.trace.node_ended(node_id, "failed", error)
        self.publish(
            events.NODE_FINISHED, {"node": node_id, "type": node_type, "status": "failed", "duration_ms": duration_ms, "error": error}
        )

    def _step_end(self, node_id: str, status: str, duration_ms: int, **fields) -> None:
        step = self._steps[node_id]
        step.status, step.duration_ms = status, duration_ms
        for name, value in fields.items():
            setattr(step, name, value)

    def step_of(self, node_id: str) -> RunStep | None:
        return self._steps.get(node_id)

    def steps_save(self) -> None:
        """The run's trace, written by the transaction that finishes the run."""
        RunStep.objects.bulk_create(self._steps.values())

    def warn(self, node_id: str | None, message: str) -> None:
        warning = {"node": node_id, "message": message}
        self.warnings.append(warning)
        Run.objects.filter(pk=self.run.pk).update(warnings=storable_json(self.warnings))
        self.publish(events.MEMORY_WARNING, warning)

    def publish(self, event_type: str, data: dict) -> None:
        events.publish(event_type, data, run_id=self.run.id, thread_id=self.run.thread_id)
