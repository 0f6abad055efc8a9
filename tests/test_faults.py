"""Faults with real processes: a worker killed mid-turn."""

from __future__ import annotations

import threading

import pytest

from tests.fakellm import Reply
from tests.graphs import chat_graph
from workflows.models import Message, Run

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def test_a_worker_killed_mid_turn_finishes_the_turn_exactly_once(require_postgres, require_redis, make_workflow, provider, fake_llm, tmp_path):
    import redis
    from django.db import connection

    from tests.stack import full_mode_env, start_worker, wait_for
    from workflows import services
    from workflows.models import Thread, Workflow

    first_call = threading.Event()

    def respond(request):
        if not first_call.is_set():
            first_call.set()
            return Reply(text="never delivered", delay=60)  # the first worker dies while waiting here
        return Reply(text=f"echo: {request.last_user}")

    fake_llm.responder = respond
    workflow = Workflow.objects.get(pk=make_workflow(chat_graph(provider.pk, memory={"type": "memory.buffer"}))["id"])
    redis.Redis.from_url(require_redis).flushdb()
    env = full_mode_env(connection.settings_dict["NAME"], require_redis, SKEIN_REDELIVERY_TIMEOUT_S=3)

    # Enqueue through the real broker: this test process plays the web server in the full mode.
    from config.celery import app

    app.conf.task_always_eager = False
    app.conf.broker_url = require_redis
    app.conf.broker_transport_options = {"visibility_timeout": 3}
    try:
        first = start_worker(env, tmp_path, concurrency=4, name="doomed")
        thread = Thread.objects.create(workflow=workflow, owner=workflow.owner)
        version = services.draft_snapshot(workflow=workflow)
        run = services.run_create(version=version, trigger="chat", input_text="hello", thread=thread)
        wait_for(first_call.is_set, timeout=60, what="the model call", diagnostics=first.output)
        assert Run.objects.get(pk=run.pk).status == Run.Status.RUNNING
        first.kill()  # kill -9: no goodbye, no ack
        first.proc.wait(timeout=10)

        second = start_worker(env, tmp_path, concurrency=4, name="survivor")
        try:
            wait_for(lambda: Run.objects.get(pk=run.pk).is_done, timeout=120, what="the redelivered turn", diagnostics=second.output)
        finally:
            second.stop()
        first.stop()
    finally:
        app.conf.task_always_eager = True
        app.conf.broker_url = "memory://"

    run.refresh_from_db()
    assert run.status == "succeeded" and run.output == "echo: hello" and run.attempts == 2
    assert [(m.role, m.content) for m in Message.objects.filter(thread=thread).order_by("seq")] == [
        ("user", "hello"), ("assistant", "echo: hello"),
    ]
    assert run.steps.count() == 3
