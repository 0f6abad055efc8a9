"""Faults with real processes: a worker killed mid-turn."""

from __future__ import annotations

import concurrent.futures
import threading

import httpx
import pytest

from runs.models import Message, Run
from tests.fakellm import Reply
from tests.graphs import chat_graph

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def test_a_worker_killed_mid_turn_finishes_the_turn_exactly_once(require_postgres, require_redis, user, provider, fake_llm, tmp_path):
    from django.db import connection

    from tests.stack import full_mode_env, start_daphne, start_worker, wait_for
    from workflows import services

    first_call = threading.Event()

    def respond(request):
        if not first_call.is_set():
            first_call.set()
            return Reply(text="never delivered", delay=60)  # the first worker dies while waiting here
        return Reply(text=f"echo: {request.last_user}")

    fake_llm.responder = respond
    workflow = services.workflow_create(owner=user, name="faults", graph=chat_graph(provider.pk, memory={"type": "memory.buffer"}))
    env = full_mode_env(connection.settings_dict["NAME"], require_redis, SKEIN_REDELIVERY_TIMEOUT_S=3)
    doomed = start_worker(env, tmp_path, concurrency=4, name="doomed")
    web, base = start_daphne(env, tmp_path)
    pool = concurrent.futures.ThreadPoolExecutor(1)
    try:
        token = httpx.post(f"{base}/api/auth/token/", json={"username": "alice", "password": "alice-password"}, timeout=60).json()["token"]
        answer = pool.submit(
            httpx.post,
            f"{base}/api/workflows/{workflow.pk}/chat/",
            json={"message": "hello"},
            headers={"Authorization": f"Token {token}"},
            timeout=180,
        )
        wait_for(first_call.is_set, timeout=60, what="the model call", diagnostics=doomed.output)
        run = Run.objects.get()
        assert run.status == Run.Status.RUNNING
        doomed.kill()  # kill -9: no goodbye, no ack
        doomed.proc.wait(timeout=10)

        survivor = start_worker(env, tmp_path, concurrency=4, name="survivor")
        try:
            reply = answer.result(timeout=180)
        finally:
            survivor.stop()
    finally:
        pool.shutdown(wait=False)
        web.stop()
        doomed.stop()

    # the web request that was waiting got the answer of the redelivered turn
    assert reply.status_code == 200 and reply.json()["reply"] == "echo: hello", reply.text
    run.refresh_from_db()
    assert run.status == "succeeded" and run.output == "echo: hello" and run.attempts == 2
    assert [(m.role, m.content) for m in Message.objects.filter(thread=run.thread).order_by("seq")] == [
        ("user", "hello"),
        ("assistant", "echo: hello"),
    ]
    assert run.steps.count() == 3
