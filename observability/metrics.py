"""Prometheus metrics (``GET /metrics``), recorded in one place.

Turns are counted where a run finishes (``turns._finish`` calls ``turn_finished``) and
summarizations where one is recorded (``memory.services.summarization_record``). With several
processes (daphne and Celery workers) set ``PROMETHEUS_MULTIPROC_DIR`` to a directory they all
share (a volume, for containers), empty at first: prometheus-client then keeps every process's
values in files there and ``/metrics`` adds them up (its multiprocess mode).
"""

from __future__ import annotations

import hmac
import os

from django.conf import settings
from django.http import HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import REGISTRY as PROCESS_REGISTRY
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
    import socket

    from prometheus_client import values

    # Each process writes its own files, named by this identifier: host and pid, so that
    # containers sharing one volume (each with its own pid 1) never write the same file.
    values.ValueClass = values.MultiProcessValue(lambda: f"{socket.gethostname()}-{os.getpid()}".replace("_", "-"))

TURNS = Counter("skein_turns_total", "Turns (runs) finished, by status.", ["status"])
TURN_DURATION = Histogram(
    "skein_turn_duration_seconds",
    "Time from a turn's start to its end.",
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300),
)
SUMMARIZATIONS = Counter("skein_summarizations_total", "Memory summarizations, by status (ok, failed).", ["status"])
MODEL_TOKENS = Counter("skein_model_tokens_total", "Tokens of model calls, by direction (input, output).", ["direction"])
MODEL_COST = Counter("skein_model_cost_usd_total", "Cost of model calls (litellm's prices), in US dollars.")
SPEND_REFUSALS = Counter("skein_spend_refusals_total", "Turns refused by a daily spend limit, by scope.", ["scope"])


def turn_finished(*, run) -> None:
    TURNS.labels(status=run.status).inc()
    if run.started and run.finished:
        TURN_DURATION.observe(max(0.0, (run.finished - run.started).total_seconds()))
    if run.prompt_tokens:
        MODEL_TOKENS.labels(direction="input").inc(run.prompt_tokens)
    if run.completion_tokens:
        MODEL_TOKENS.labels(direction="output").inc(run.completion_tokens)
    if run.cost:
        MODEL_COST.inc(run.cost)


def summarization_recorded(*, status: str) -> None:
    SUMMARIZATIONS.labels(status=status).inc()


def spend_refused(*, scope: str) -> None:
    SPEND_REFUSALS.labels(scope=scope).inc()


def exposition() -> bytes:
    """Every process's metrics in the multiprocess mode, else this process's."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        return generate_latest(registry)
    return generate_latest(PROCESS_REGISTRY)


def _allowed(request) -> bool:
    """Staff sessions, or ``Authorization: Bearer $SKEIN_METRICS_TOKEN`` when that is set."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated and user.is_staff:
        return True
    token = settings.SKEIN_METRICS_TOKEN
    scheme, _, given = request.headers.get("Authorization", "").partition(" ")
    return bool(token) and scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), token.encode())


@require_GET
def metrics_view(request):
    if not _allowed(request):
        response = HttpResponse(
            '{"detail": "metrics are for staff sessions or Authorization: Bearer $SKEIN_METRICS_TOKEN"}',
            status=401 if not request.headers.get("Authorization") and not request.user.is_authenticated else 403,
            content_type="application/json",
        )
        response["WWW-Authenticate"] = "Bearer"
        return response
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
