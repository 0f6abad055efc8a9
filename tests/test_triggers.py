"""Webhook, schedule and manual triggers (embedded mode; the beat test runs real processes)."""

from __future__ import annotations

import json
import time

import pytest
from django.test import override_settings
from django_celery_beat.models import PeriodicTask
from rest_framework.test import APIClient

from runs.models import Run
from tests.graphs import edge, node
from triggers.models import Webhook
from triggers.services import SIGNATURE_HEADER, TIMESTAMP_HEADER, schedule_fire, sign

pytestmark = pytest.mark.django_db(transaction=True)


def webhook_graph(provider_id, *, require_signature=False, memory=None):
    nodes = [
        node("hook", "trigger.webhook", require_signature=require_signature),
        node("agent", "llm", 200, 0, model="agent-model", provider=provider_id, system_prompt="bot"),
        node("out", "output", 400, 0),
    ]
    edges = [edge("hook", "agent"), edge("agent", "out")]
    if memory:
        nodes.append(node("mem", memory.pop("type"), **memory))
        edges.append(edge("mem", "agent", "memory", "memory"))
    return {"nodes": nodes, "edges": edges}


@pytest.fixture
def published(api, make_workflow, provider):
    def publish(graph):
        workflow = make_workflow(graph)
        assert workflow["errors"] == [], workflow["errors"]
        assert api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
        return api.get(f"/api/workflows/{workflow['id']}/").json()

    return publish


def hook_url(workflow, node_id="hook"):
    trigger = next(t for t in workflow["triggers"] if t["node"] == node_id)
    return trigger["webhook_url"].split("://", 1)[1].split("/", 1)[1].join(["/", ""])


def post(url, body=b"", content_type="application/json", **headers):
    return APIClient().generic(
        "POST", url, body, content_type=content_type, **{f"HTTP_{k.upper().replace('-', '_')}": v for k, v in headers.items()}
    )


def test_publishing_gives_a_webhook_its_secret_url(published, provider):
    workflow = published(webhook_graph(provider.pk))
    [trigger] = workflow["triggers"]
    assert trigger["type"] == "trigger.webhook" and trigger["webhook_url"].startswith("http://testserver/api/hooks/wh_")
    assert Webhook.objects.get().token in trigger["webhook_url"]


def test_webhook_json_message_and_wait(published, provider, fake_llm, api):
    url = hook_url(published(webhook_graph(provider.pk)))
    accepted = post(url, json.dumps({"message": "hello hook", "extra": 1}))
    assert accepted.status_code == 202 and isinstance(accepted.json()["run"], int)
    run = Run.objects.get(pk=accepted.json()["run"])
    assert run.trigger == "webhook" and run.input == "hello hook" and run.payload == {"message": "hello hook", "extra": 1}

    waited = post(url + "?wait=1", json.dumps({"message": "and wait"}))
    assert waited.status_code == 200
    assert waited.json()["reply"] == "echo: and wait" and waited.json()["status"] == "succeeded"
    assert fake_llm.requests[-1].messages == [{"role": "system", "content": "bot"}, {"role": "user", "content": "and wait"}]


def test_webhook_without_message_uses_the_body_as_text(published, provider, fake_llm):
    url = hook_url(published(webhook_graph(provider.pk)))
    assert post(url + "?wait=1", "plain words", content_type="text/plain").json()["reply"] == "echo: plain words"
    body = json.dumps({"order": 42})
    assert post(url + "?wait=1", body).json()["reply"] == f"echo: {body}"


def test_webhook_bad_input(published, provider):
    url = hook_url(published(webhook_graph(provider.pk)))
    malformed = post(url, "{not json")
    assert malformed.status_code == 400 and "malformed JSON" in malformed.json()["detail"]
    assert post("/api/hooks/wh_nope/", "{}").status_code == 404
    with override_settings(SKEIN_WEBHOOK_MAX_BYTES=100):
        assert post(url, json.dumps({"message": "x" * 200})).status_code == 413
    assert post(url, json.dumps({"message": "x", "thread": {"a": 1}})).status_code == 400
    assert Run.objects.count() == 0


def test_template_sees_the_whole_payload(api, make_workflow):
    graph = {
        "nodes": [
            node("hook", "trigger.webhook"),
            node("t", "template", template="{{ payload.user.name }}: {{ input }}"),
            node("out", "output"),
        ],
        "edges": [edge("hook", "t"), edge("t", "out")],
    }
    workflow = make_workflow(graph)
    api.post(f"/api/workflows/{workflow['id']}/publish/")
    url = hook_url(api.get(f"/api/workflows/{workflow['id']}/").json())
    assert post(url + "?wait=1", json.dumps({"message": "hi", "user": {"name": "Ann"}})).json()["reply"] == "Ann: hi"


def test_signatures_and_replays(published, provider):
    workflow = published(webhook_graph(provider.pk, require_signature=True))
    url = hook_url(workflow)
    secret = workflow["triggers"][0]["signing_secret"]
    body = json.dumps({"message": "signed"}).encode()
    now = str(int(time.time()))

    assert post(url, body).status_code == 401
    assert post(url, body, **{TIMESTAMP_HEADER: now, SIGNATURE_HEADER: "sha256=00"}).status_code == 401
    old = str(int(time.time()) - 3600)
    assert post(url, body, **{TIMESTAMP_HEADER: old, SIGNATURE_HEADER: sign(secret, old, body)}).status_code == 401
    tampered = post(url, body + b" ", **{TIMESTAMP_HEADER: now, SIGNATURE_HEADER: sign(secret, now, body)})
    assert tampered.status_code == 401
    good = post(url, body, **{TIMESTAMP_HEADER: now, SIGNATURE_HEADER: sign(secret, now, body)})
    assert good.status_code == 202
    # the same signed request again (a retry, or a replay) runs nothing: it gets the first run
    replay = post(url, body, **{TIMESTAMP_HEADER: now, SIGNATURE_HEADER: sign(secret, now, body)})
    assert replay.status_code == 202 and replay.json()["run"] == good.json()["run"]
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert Run.objects.count() == 1


def test_idempotency_key_runs_nothing_twice(published, provider, fake_llm):
    url = hook_url(published(webhook_graph(provider.pk)))
    first = post(url + "?wait=1", json.dumps({"message": "pay"}), **{"Idempotency-Key": "order-7"})
    again = post(url + "?wait=1", json.dumps({"message": "pay"}), **{"Idempotency-Key": "order-7"})
    assert first.json()["run"] == again.json()["run"] and again.json()["reply"] == "echo: pay"
    other = post(url, json.dumps({"message": "pay"}), **{"Idempotency-Key": "order-8"})
    assert other.json()["run"] != first.json()["run"]
    assert Run.objects.count() == 2 and len(fake_llm.requests) == 2


def test_thread_in_the_payload_continues_memory_otherwise_memory_binds_to_the_run(published, provider, fake_llm):
    url = hook_url(published(webhook_graph(provider.pk, memory={"type": "memory.buffer"})))
    post(url + "?wait=1", json.dumps({"message": "my name is Ann", "thread": "customer-42"}))
    second = post(url + "?wait=1", json.dumps({"message": "what is my name?", "thread": "customer-42"})).json()
    assert fake_llm.requests[-1].messages[1:] == [
        {"role": "user", "content": "my name is Ann"},
        {"role": "assistant", "content": "echo: my name is Ann"},
        {"role": "user", "content": "what is my name?"},
    ]
    assert second["thread"] is not None
    post(url + "?wait=1", json.dumps({"message": "no thread"}))
    assert fake_llm.requests[-1].messages[1:] == [{"role": "user", "content": "no thread"}]


def test_regenerating_a_webhook_retires_the_old_url(published, provider, api):
    workflow = published(webhook_graph(provider.pk))
    old = hook_url(workflow)
    response = api.post(f"/api/workflows/{workflow['id']}/webhooks/hook/regenerate/")
    assert response.status_code == 200
    new = response.json()[0]["webhook_url"]
    assert post(old, "{}").status_code == 404
    assert post(new.split("testserver", 1)[1], json.dumps({"message": "x"})).status_code == 202
    assert api.post(f"/api/workflows/{workflow['id']}/webhooks/nope/regenerate/").status_code == 404


def schedule_graph(provider_id, **params):
    return {
        "nodes": [node("tick", "trigger.schedule", **params), node("t", "template", template="tick: {{ input }}"), node("out", "output")],
        "edges": [edge("tick", "t"), edge("t", "out")],
    }


def test_publishing_syncs_schedules_with_celery_beat(api, make_workflow, provider):
    workflow = make_workflow(schedule_graph(provider.pk, cron="30 8 * * 1-5", timezone="Europe/Paris", input="daily report"))
    api.post(f"/api/workflows/{workflow['id']}/publish/")
    task = PeriodicTask.objects.get(name=f"skein:{workflow['id']}:tick")
    assert task.task == "workflows.tasks.fire_schedule" and json.loads(task.kwargs) == {"workflow_id": workflow["id"], "node": "tick"}
    assert (task.crontab.minute, task.crontab.hour, task.crontab.day_of_week, str(task.crontab.timezone)) == (
        "30",
        "8",
        "1-5",
        "Europe/Paris",
    )
    trigger = api.get(f"/api/workflows/{workflow['id']}/").json()["triggers"][0]
    assert len(trigger["next_runs"]) == 3 and trigger["next_run"] == trigger["next_runs"][0]
    assert trigger["next_runs"][0] < trigger["next_runs"][1]

    graph = schedule_graph(provider.pk, cron="0 12 * * *", timezone="UTC")
    api.patch(f"/api/workflows/{workflow['id']}/", {"graph": graph, "revision": 1}, format="json")
    api.post(f"/api/workflows/{workflow['id']}/publish/")
    task.refresh_from_db()
    assert (task.crontab.minute, task.crontab.hour) == ("0", "12")

    api.patch(
        f"/api/workflows/{workflow['id']}/",
        {"graph": {"nodes": [node("chat", "trigger.chat"), node("out", "output")], "edges": [edge("chat", "out")]}, "revision": 2},
        format="json",
    )
    api.post(f"/api/workflows/{workflow['id']}/publish/")
    assert not PeriodicTask.objects.filter(name__startswith=f"skein:{workflow['id']}:").exists()

    api.patch(f"/api/workflows/{workflow['id']}/", {"graph": graph, "revision": 3}, format="json")
    api.post(f"/api/workflows/{workflow['id']}/publish/")
    assert PeriodicTask.objects.filter(name__startswith=f"skein:{workflow['id']}:").count() == 1
    api.delete(f"/api/workflows/{workflow['id']}/")
    assert not PeriodicTask.objects.filter(name__startswith=f"skein:{workflow['id']}:").exists()


def test_a_tick_creates_a_run_and_ticks_do_not_pile_up(api, make_workflow, provider):
    workflow = make_workflow(schedule_graph(provider.pk, input="hello"))
    api.post(f"/api/workflows/{workflow['id']}/publish/")
    run = schedule_fire(workflow_id=workflow["id"], node="tick")
    run.refresh_from_db()
    assert run.trigger == "schedule" and run.output == "tick: hello" and run.thread_id is None
    # a run still in progress: the next tick is skipped
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    assert schedule_fire(workflow_id=workflow["id"], node="tick") is None
    assert Run.objects.filter(workflow_id=workflow["id"]).count() == 1


def test_manual_run_button_runs_the_draft(api, make_workflow, provider):
    graph = {
        "nodes": [
            node("go", "trigger.manual", input="default input"),
            node("t", "template", template="ran: {{ input }}"),
            node("out", "output"),
        ],
        "edges": [edge("go", "t"), edge("t", "out")],
    }
    workflow = make_workflow(graph)
    result = api.post(f"/api/workflows/{workflow['id']}/run/", {"message": "now"}, format="json").json()
    assert result["reply"] == "ran: now" and result["thread"] is None
    assert api.post(f"/api/workflows/{workflow['id']}/run/", {}, format="json").json()["reply"] == "ran: default input"
    run = api.get(f"/api/runs/{result['run']}/").json()
    assert run["trigger"] == "manual" and [s["node"] for s in run["steps"]] == ["go", "t", "out"]
    chat_only = make_workflow({"nodes": [node("c", "trigger.chat"), node("out", "output")], "edges": [edge("c", "out")]})
    response = api.post(f"/api/workflows/{chat_only['id']}/run/", {"message": "x"}, format="json")
    assert response.status_code == 400 and "trigger.manual" in response.json()["detail"]


@pytest.mark.postgres
@pytest.mark.redis
def test_real_beat_and_worker_create_runs_on_schedule(require_postgres, require_redis, api, make_workflow, provider, tmp_path):
    from django.db import connection

    from tests.stack import Process, full_mode_env, start_worker, wait_for

    workflow = make_workflow(schedule_graph(provider.pk, interval_seconds=1, input="beat"))
    api.post(f"/api/workflows/{workflow['id']}/publish/")
    env = full_mode_env(connection.settings_dict["NAME"], require_redis)
    worker = start_worker(env, tmp_path, concurrency=4)
    beat = Process(
        "beat",
        [
            str(__import__("tests.stack", fromlist=["BIN"]).BIN / "celery"),
            "-A",
            "config",
            "beat",
            "--scheduler",
            "triggers.beat:Scheduler",
            "--loglevel",
            "INFO",
            "--max-interval",
            "1",
        ],
        env,
        tmp_path,
    )
    try:
        wait_for(
            lambda: Run.objects.filter(workflow_id=workflow["id"], status="succeeded").count() >= 3,
            timeout=90,
            what="three scheduled runs",
            diagnostics=lambda: beat.output() + worker.output(),
        )
    finally:
        beat.stop()
        worker.stop()
    runs = list(Run.objects.filter(workflow_id=workflow["id"]).order_by("id"))
    assert all(r.trigger == "schedule" and r.output == "tick: beat" for r in runs if r.status == "succeeded")


def test_nul_characters_in_a_webhook_body_are_refused(published, provider):
    url = hook_url(published(webhook_graph(provider.pk)))
    assert post(url, '{"message": "a\\u0000b"}').status_code == 400
    assert post(url, "a\x00b", content_type="text/plain").status_code == 400
    assert Run.objects.count() == 0
