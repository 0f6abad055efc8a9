"""The database queries of one chat turn, counted: a test that fails when they grow.

A turn on a thread that already has a turn (the steady state of a conversation), with a buffer
memory, through the services: the embedded mode's (the turn runs inside ``chat_start``) and the
full mode's two halves (the web's ``chat_start``, which enqueues; the worker's ``turn_process``).
When a change adds a query, it is either worth it (raise the bound here, and say why in the
commit) or it is waste."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs import services as runs
from runs import turns
from runs.models import Run
from tests.graphs import chat_graph
from workflows import services
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)

# Counted when this test was written (BEGIN, COMMIT and savepoints count: each is a round trip);
# lower them when a change saves queries. The worker's half was 26 while the turn lock was a
# PostgreSQL advisory lock (its lock and unlock); the Redis lock takes none; 24 before memory's
# append stopped taking a savepoint inside the turn's final transaction.
EMBEDDED_TURN_QUERIES = 25
FULL_WEB_QUERIES = 4
FULL_WORKER_QUERIES = 22


def _workflow(user, provider) -> Workflow:
    return services.workflow_create(owner=user, name="counted", graph=chat_graph(provider.pk, memory={"type": "memory.buffer"}))


def _report(context) -> str:
    return "\n".join(q["sql"][:160] for q in context.captured_queries)


def test_an_embedded_chat_turn_stays_within_its_queries(user, provider, fake_llm):
    workflow = _workflow(user, provider)
    first = runs.chat_start(workflow=workflow, message="first", thread=None)
    thread = Run.objects.get(pk=first.pk).thread
    workflow = Workflow.objects.get(pk=workflow.pk)
    with CaptureQueriesContext(connection) as context:
        run = runs.chat_start(workflow=workflow, message="second", thread=thread)
    run.refresh_from_db()
    assert run.status == "succeeded" and run.output == "echo: second"
    print(f"embedded turn: {len(context)} queries\n{_report(context)}")
    assert len(context) <= EMBEDDED_TURN_QUERIES, _report(context)


def test_a_full_mode_chat_turn_stays_within_its_queries(user, provider, fake_llm, monkeypatch, settings, require_redis):
    from runs import tasks

    workflow = _workflow(user, provider)
    first = runs.chat_start(workflow=workflow, message="first", thread=None)
    thread = Run.objects.get(pk=first.pk).thread
    workflow = Workflow.objects.get(pk=workflow.pk)
    settings.REDIS_URL, settings.FULL_MODE = require_redis, True
    enqueued = []
    monkeypatch.setattr(tasks.run_turn, "delay", enqueued.append)
    with CaptureQueriesContext(connection) as web:
        run = runs.chat_start(workflow=workflow, message="second", thread=thread)
    assert enqueued == [run.pk]
    with CaptureQueriesContext(connection) as worker:
        turns.turn_process(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "succeeded" and run.output == "echo: second"
    print(f"web: {len(web)} queries\n{_report(web)}\nworker: {len(worker)} queries\n{_report(worker)}")
    assert len(web) <= FULL_WEB_QUERIES, _report(web)
    assert len(worker) <= FULL_WORKER_QUERIES, _report(worker)
