"""Metrics (/metrics through a Prometheus text parser) and OpenTelemetry traces (the SDK's
in-memory exporter, and a real OTLP export)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from observability import tracing as telemetry
from runs.models import Run
from tests.fakellm import Reply
from tests.graphs import chat_graph, edge, node
from tests.openai_client import api_token, oai  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parent.parent
TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_SPAN}-01"


def summarizing(make_workflow, provider):
    memory = {"type": "memory.summary", "max_messages": 2, "keep_last": 0, "llm_source": "external"}
    return make_workflow(chat_graph(provider.pk, memory=memory, summarizer={"model": "cheap-model", "provider": provider.pk}))


def responder(request):
    return Reply(text="SUMMARY" if request.model == "cheap-model" else f"echo: {request.last_user}", prompt_tokens=5)


# --- metrics --------------------------------------------------------------------------------------
def scrape(client) -> dict:
    response = client.get("/metrics", HTTP_AUTHORIZATION="Bearer scrape-token")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def delta(before, after, name, **labels):
    key = (name, tuple(sorted(labels.items())))
    return after.get(key, 0) - before.get(key, 0)


def test_metrics_count_turns_summaries_and_tokens(settings, client, make_workflow, provider, chat, fake_llm):
    settings.SKEIN_METRICS_TOKEN = "scrape-token"
    assert not os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    fake_llm.responder = responder
    bot = summarizing(make_workflow, provider)
    before = scrape(client)
    first = chat(bot["id"], "one")
    chat(bot["id"], "two", thread=first["thread"])  # the history reached 2 messages: summarized first
    fake_llm.responder = lambda request: Reply(status=400, text="no")
    assert chat(bot["id"], "three")["status"] == "failed"
    after = scrape(client)

    assert delta(before, after, "skein_turns_total", status="succeeded") == 2
    assert delta(before, after, "skein_turns_total", status="failed") == 1
    assert delta(before, after, "skein_turn_duration_seconds_count") == 3
    assert delta(before, after, "skein_turn_duration_seconds_bucket", le="+Inf") == 3
    assert delta(before, after, "skein_summarizations_total", status="ok") == 1
    runs = Run.objects.filter(workflow_id=bot["id"])
    assert delta(before, after, "skein_model_tokens_total", direction="input") == sum(r.prompt_tokens for r in runs) == 15
    assert delta(before, after, "skein_model_tokens_total", direction="output") == sum(r.completion_tokens for r in runs)


def test_metrics_add_up_across_processes(tmp_path):
    """PROMETHEUS_MULTIPROC_DIR: what separate processes (web, workers) count, /metrics sums."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(tmp_path), "DJANGO_SETTINGS_MODULE": "config.settings"}
    record = (
        "import django; django.setup()\n"
        "from types import SimpleNamespace as R\n"
        "from observability import metrics\n"
        "for status in {statuses}: metrics.turn_finished(run=R(status=status, started=None, finished=None, prompt_tokens=3, completion_tokens=1, cost=0))\n"
        "metrics.summarization_recorded(status='failed')\n"
    )
    for statuses in (["succeeded", "succeeded"], ["succeeded", "failed"]):
        subprocess.run([sys.executable, "-c", record.format(statuses=statuses)], cwd=ROOT, env=env, check=True, timeout=120)
    read = "import django; django.setup()\nfrom observability import metrics\nprint(metrics.exposition().decode())"
    text = subprocess.run([sys.executable, "-c", read], cwd=ROOT, env=env, check=True, timeout=120, capture_output=True, text=True).stdout
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(text) for s in f.samples}
    assert samples[("skein_turns_total", (("status", "succeeded"),))] == 3
    assert samples[("skein_turns_total", (("status", "failed"),))] == 1
    assert samples[("skein_model_tokens_total", (("direction", "input"),))] == 12
    assert samples[("skein_summarizations_total", (("status", "failed"),))] == 2
    # one file per process and kind, named by host and pid (containers on one volume never collide)
    host = socket.gethostname().replace("_", "-")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert all(n.startswith(("counter_", "histogram_")) and f"_{host}-" in n for n in names), names
    assert len({n.split("_", 1)[1] for n in names}) == 3, names  # the two writers and the reader


# --- traces ---------------------------------------------------------------------------------------
@pytest.fixture
def spans():
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.use_provider(provider)
    yield exporter
    telemetry.use_provider(None)
    provider.shutdown()


def run_spans(exporter, run_id: int) -> list:
    """The spans of one run: its root and everything under it."""
    finished = exporter.get_finished_spans()
    root = next(s for s in finished if s.attributes.get("skein.run.id") == run_id)
    return [s for s in finished if s.context.trace_id == root.context.trace_id]


def test_a_run_is_a_trace_of_its_nodes_and_model_calls(spans, make_workflow, provider, chat, fake_llm):
    from opentelemetry.trace import SpanKind, StatusCode

    fake_llm.responder = responder
    bot = summarizing(make_workflow, provider)
    first = chat(bot["id"], "one")
    turn = chat(bot["id"], "two", thread=first["thread"])
    trace = run_spans(spans, turn["run"])
    by_name = {}
    for span in trace:
        by_name.setdefault(span.name, []).append(span)
    root = by_name["invoke_agent test workflow"][0]
    assert root.parent is None
    assert root.attributes["gen_ai.agent.id"] == str(bot["id"]) and root.attributes["gen_ai.conversation.id"] == str(first["thread"])
    assert root.attributes["skein.run.status"] == "succeeded" and root.attributes["gen_ai.usage.input_tokens"] == 10
    nodes = {s.attributes["skein.node.id"]: s for s in trace if s.name.startswith("node ")}
    assert set(nodes) == {"chat", "agent", "out"} and all(s.parent.span_id == root.context.span_id for s in nodes.values())
    assert nodes["agent"].attributes["skein.node.type"] == "llm"
    calls = sorted(by_name["chat agent-model"] + by_name["chat cheap-model"], key=lambda s: s.start_time)
    assert [s.attributes["gen_ai.request.model"] for s in calls] == ["cheap-model", "agent-model"]  # the summary first
    for call in calls:
        assert call.kind == SpanKind.CLIENT and call.parent.span_id == nodes["agent"].context.span_id
        assert call.attributes["gen_ai.operation.name"] == "chat" and call.attributes["gen_ai.provider.name"] == "openai"
        assert call.attributes["gen_ai.usage.input_tokens"] == 5 and call.attributes["gen_ai.usage.output_tokens"] >= 1
        assert call.attributes["server.address"] == "127.0.0.1"
        assert call.status.status_code != StatusCode.ERROR

    fake_llm.responder = lambda request: Reply(status=400, text="refused")
    failed = chat(bot["id"], "three")
    trace = run_spans(spans, failed["run"])
    errors = {s.name: s for s in trace if s.status.status_code == StatusCode.ERROR}
    assert {"invoke_agent test workflow", "node agent", "chat agent-model"} <= set(errors)
    assert errors["chat agent-model"].attributes["error.type"] == "NodeError"


def test_a_callers_traceparent_is_continued_on_webhooks_and_v1(spans, api, make_workflow, provider, client, oai, fake_llm):
    graph = chat_graph(provider.pk)
    graph["nodes"].append(node("hook", "trigger.webhook"))
    graph["edges"].append(edge("hook", "agent"))
    bot = make_workflow(graph)
    api.post(f"/api/workflows/{bot['id']}/publish/")
    hook = next(t for t in api.get(f"/api/workflows/{bot['id']}/").json()["triggers"] if t["node"] == "hook")
    path = "/" + hook["webhook_url"].split("/", 3)[3]
    hooked = client.post(path + "?wait=1", {"message": "hi"}, content_type="application/json", HTTP_TRACEPARENT=TRACEPARENT).json()
    completion = oai.chat.completions.with_raw_response.create(
        model=str(bot["id"]), messages=[{"role": "user", "content": "hi"}], extra_headers={"traceparent": TRACEPARENT}
    )
    plain = client.post(path + "?wait=1", {"message": "hi"}, content_type="application/json", HTTP_TRACEPARENT="garbage").json()
    for run_id in (hooked["run"], int(completion.headers["X-Skein-Run"])):
        root = next(s for s in spans.get_finished_spans() if s.attributes.get("skein.run.id") == run_id)
        assert format(root.context.trace_id, "032x") == TRACE_ID and format(root.parent.span_id, "016x") == PARENT_SPAN
        assert Run.objects.get(pk=run_id).trace_context == TRACEPARENT
    root = next(s for s in spans.get_finished_spans() if s.attributes.get("skein.run.id") == plain["run"])
    assert root.parent is None and format(root.context.trace_id, "032x") != TRACE_ID


class _Collector(BaseHTTPRequestHandler):
    received: list = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).received.append((self.path, self.headers.get("Content-Type"), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def test_spans_are_exported_over_otlp_when_the_endpoint_is_set():
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    _Collector.received = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "OTEL_SERVICE_NAME": "skein-test",
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{server.server_address[1]}",
    }
    script = (
        "import django; django.setup()\n"  # apps.ready configures the export
        "from opentelemetry import trace\n"
        "from observability import tracing as telemetry\n"
        "telemetry.tracer().start_span('probe', attributes={'gen_ai.request.model': 'm'}).end()\n"
        "trace.get_tracer_provider().shutdown()\n"  # flushes the batch
    )
    try:
        subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=env, check=True, timeout=120)
    finally:
        server.shutdown()
        server.server_close()
    assert [(path, kind) for path, kind, _ in _Collector.received] == [("/v1/traces", "application/x-protobuf")]
    request = ExportTraceServiceRequest.FromString(_Collector.received[0][2])
    resource = request.resource_spans[0]
    assert {a.key: a.value.string_value for a in resource.resource.attributes}["service.name"] == "skein-test"
    assert [s.name for s in resource.scope_spans[0].spans] == ["probe"]
