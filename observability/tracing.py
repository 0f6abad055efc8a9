"""OpenTelemetry traces: one span per run, per node and per model call.

A run is an ``invoke_agent`` span (the workflow as the agent, the thread as the conversation);
each node that ran is a child span; each model call is a ``chat {model}`` client span under its
node, with the GenAI semantic conventions' attributes (``gen_ai.request.model``,
``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``, ...). A run started with a W3C
``traceparent`` (webhooks and ``/v1``, stored on ``Run.trace_context``) continues that trace, in
whichever process executes it.

Spans are exported over OTLP (http/protobuf) when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set
(``configure``, at start-up); otherwise OpenTelemetry's no-op tracer makes every span free. The
standard ``OTEL_*`` variables (service name, headers, sampler) apply.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from contextlib import contextmanager
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

logger = logging.getLogger("skein.telemetry")

TRACEPARENT = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")
# gen_ai.provider.name of each provider kind (the model's own API, as far as it is known).
PROVIDER_NAMES = {"openai": "openai", "anthropic": "anthropic", "ollama": "ollama", "openai_compatible": "openai", "local": "skein.local"}

_provider = None  # a TracerProvider of the caller's (tests: the SDK with an in-memory exporter)
_configure_lock = threading.Lock()


def use_provider(provider) -> None:
    """Send Skein's spans to ``provider`` instead of the global one (None: the global again)."""
    global _provider
    _provider = provider


def tracer():
    return (_provider or trace.get_tracer_provider()).get_tracer("skein")


def configure() -> bool:
    """Export over OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or ``..._TRACES_ENDPOINT``) is set."""
    if not (os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")):
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    with _configure_lock:
        if isinstance(trace.get_tracer_provider(), TracerProvider):
            return True
        provider = TracerProvider(resource=Resource.create({SERVICE_NAME: os.environ.get("OTEL_SERVICE_NAME", "skein")}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace.set_tracer_provider(provider)
    logger.info(
        "exporting traces over OTLP to %s",
        os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"),
    )
    return True


def incoming_traceparent(headers) -> str:
    """The request's ``traceparent`` header if it is well formed, else ""."""
    value = (headers.get("traceparent") or "").strip().lower()
    return value if TRACEPARENT.match(value) else ""


class RunTrace:
    """The spans of one run. Parents are explicit, so calls from other threads (a summarizer's
    deadline thread) land under the right node."""

    def __init__(self, run):
        self._tracer = tracer()
        parent = TraceContextTextMapPropagator().extract({"traceparent": run.trace_context}) if run.trace_context else None
        workflow = run.workflow
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.id": str(run.workflow_id),
            "gen_ai.agent.name": workflow.name,
            "skein.run.id": run.pk,
            "skein.workflow.id": run.workflow_id,
            "skein.trigger": run.trigger,
        }
        if run.thread_id:
            attributes["gen_ai.conversation.id"] = str(run.thread_id)
        self.span = self._tracer.start_span(f"invoke_agent {workflow.name}", context=parent, attributes=attributes)
        self._nodes: dict[str, object] = {}
        self._current: str | None = None
        self._ended = False

    def _context_of(self, node_id: str | None):
        span = self._nodes.get(node_id) if node_id else None
        if span is None and self._current:
            span = self._nodes.get(self._current)
        return trace.set_span_in_context(span or self.span)

    def node_started(self, node_id: str, node_type: str) -> None:
        self._nodes[node_id] = self._tracer.start_span(
            f"node {node_id}",
            context=trace.set_span_in_context(self.span),
            attributes={"skein.node.id": node_id, "skein.node.type": node_type},
        )
        self._current = node_id

    def node_ended(self, node_id: str, status: str, error: str = "") -> None:
        span = self._nodes.get(node_id)
        if span is None:
            return
        span.set_attribute("skein.node.status", status)
        if error:
            span.set_status(Status(StatusCode.ERROR, error[:500]))
        span.end()
        if self._current == node_id:
            self._current = None

    @contextmanager
    def model_call(self, node_id: str, ref, provider):
        """A ``chat {model}`` span around one model call; ``record(result)`` adds the usage."""
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.request.model": ref.model,
            "gen_ai.provider.name": PROVIDER_NAMES.get(getattr(provider, "kind", ""), "litellm"),
            "skein.node.id": node_id,
        }
        if ref.temperature is not None:
            attributes["gen_ai.request.temperature"] = ref.temperature
        if ref.max_tokens is not None:
            attributes["gen_ai.request.max_tokens"] = ref.max_tokens
        host = urlsplit(getattr(provider, "api_base", "") or "").hostname
        if host:
            attributes["server.address"] = host
        span = self._tracer.start_span(f"chat {ref.model}", context=self._context_of(node_id), kind=SpanKind.CLIENT, attributes=attributes)

        def record(result) -> None:
            span.set_attribute("gen_ai.response.model", result.model)
            span.set_attribute("gen_ai.usage.input_tokens", result.prompt_tokens)
            span.set_attribute("gen_ai.usage.output_tokens", result.completion_tokens)
            span.set_attribute("skein.cost_usd", result.cost)

        try:
            yield record
        except BaseException as exc:
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR, str(exc)[:500]))
            raise
        finally:
            span.end()

    def end(self, run) -> None:
        if self._ended:
            return
        self._ended = True
        for node_id in list(self._nodes):  # a node still open: the run ended inside it
            span = self._nodes[node_id]
            if span.is_recording() and getattr(span, "end_time", None) is None:
                self.node_ended(node_id, "interrupted")
        self.span.set_attribute("skein.run.status", run.status)
        self.span.set_attribute("gen_ai.usage.input_tokens", run.prompt_tokens)
        self.span.set_attribute("gen_ai.usage.output_tokens", run.completion_tokens)
        if run.error:
            self.span.set_status(Status(StatusCode.ERROR, run.error[:500]))
        self.span.end()


def run_finished(*, run, runtime) -> None:
    """End the run's span (a run refused or given up before it ran gets one of its own)."""
    run_trace = getattr(runtime, "trace", None) or RunTrace(run)
    run_trace.end(run)
