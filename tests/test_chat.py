"""Chat turns through the API (embedded mode): what models are sent, transcripts, steps, failures."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import override_settings

from runs.models import Message, Run, RunStep, Thread
from tests.fakellm import Reply
from tests.graphs import edge, node
from workflows import services as workflow_services

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_turn_sends_exactly_system_and_input_and_returns_the_reply(chatbot, chat, fake_llm, api):
    fake_llm.responder = lambda request: Reply(text="Hello, human.")
    turn = chat(chatbot["id"], "Hi bot")
    assert turn["reply"] == "Hello, human." and turn["warnings"] == [] and turn["status"] == "succeeded"
    [request] = fake_llm.requests
    assert request.model == "agent-model" and request.stream
    assert request.messages == [{"role": "system", "content": "You are a test bot."}, {"role": "user", "content": "Hi bot"}]

    transcript = api.get(f"/api/threads/{turn['thread']}/messages/").json()
    assert [(m["role"], m["content"]) for m in transcript] == [("user", "Hi bot"), ("assistant", "Hello, human.")]

    run = api.get(f"/api/runs/{turn['run']}/").json()
    assert run["status"] == "succeeded" and run["trigger"] == "chat" and run["output"] == "Hello, human."
    assert [(s["node"], s["type"], s["status"]) for s in run["steps"]] == [
        ("chat", "trigger.chat", "succeeded"),
        ("agent", "llm", "succeeded"),
        ("out", "output", "succeeded"),
    ]
    assert all(isinstance(s["duration_ms"], int) for s in run["steps"])
    agent = run["steps"][1]
    assert agent["details"]["model"] == "agent-model" and agent["details"]["prompt_tokens"] == 11
    assert run["prompt_tokens"] == 11 and run["duration_ms"] is not None


def test_without_memory_no_history_is_sent(chatbot, chat, fake_llm):
    first = chat(chatbot["id"], "one")
    chat(chatbot["id"], "two", thread=first["thread"])
    assert fake_llm.requests[-1].messages == [
        {"role": "system", "content": "You are a test bot."},
        {"role": "user", "content": "two"},
    ]


def test_transcript_keeps_turns_in_order(chatbot, chat, api):
    thread = None
    for i in range(5):
        thread = chat(chatbot["id"], f"m{i}", thread=thread)["thread"]
    transcript = api.get(f"/api/threads/{thread}/messages/").json()
    assert [m["content"] for m in transcript] == [x for i in range(5) for x in (f"m{i}", f"echo: m{i}")]
    assert [m["seq"] for m in transcript] == list(range(1, 11))


def test_router_runs_only_the_chosen_branch(api, make_workflow, provider, chat, fake_llm):
    graph = {
        "nodes": [
            node("chat", "trigger.chat"),
            node(
                "router",
                "router.llm",
                model="router-model",
                provider=provider.pk,
                routes=[{"name": "billing", "description": "invoices, payments"}, {"name": "general", "description": "anything else"}],
                default_route="general",
            ),
            node("billing", "llm", model="billing-model", provider=provider.pk, system_prompt="billing"),
            node("general", "llm", model="general-model", provider=provider.pk, system_prompt="general"),
            node("out", "output"),
        ],
        "edges": [
            edge("chat", "router"),
            edge("router", "billing", "billing"),
            edge("router", "general", "general"),
            edge("billing", "out"),
            edge("general", "out"),
        ],
    }
    workflow = make_workflow(graph)
    assert workflow["errors"] == []

    def respond(request):
        if request.model == "router-model":
            return Reply(text="billing" if "invoice" in request.last_user else "general")
        return Reply(text=f"{request.model} answers")

    fake_llm.responder = respond
    turn = chat(workflow["id"], "my invoice is wrong")
    assert turn["reply"] == "billing-model answers"
    assert [r.model for r in fake_llm.requests] == ["router-model", "billing-model"]
    # the chosen branch got the participant's message, passed through the router
    assert fake_llm.requests[1].messages[-1] == {"role": "user", "content": "my invoice is wrong"}
    steps = {s["node"]: s for s in api.get(f"/api/runs/{turn['run']}/").json()["steps"]}
    assert "general" not in steps and steps["router"]["details"]["route"] == "billing"

    turn = chat(workflow["id"], "hello")
    assert turn["reply"] == "general-model answers"


def test_running_an_invalid_workflow_is_a_400_with_errors(api, make_workflow):
    workflow = make_workflow({"nodes": [node("l", "llm")], "edges": []})
    response = api.post(f"/api/workflows/{workflow['id']}/chat/", {"message": "hi"}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"]
    assert Run.objects.count() == 0


def test_chat_input_errors(api, chatbot):
    url = f"/api/workflows/{chatbot['id']}/chat/"
    assert api.post(url, {}, format="json").status_code == 400
    assert api.post(url, {"message": ""}, format="json").status_code == 400
    assert api.post(url, {"message": "x", "thread": "abc"}, format="json").status_code == 400
    assert api.post(url, {"message": "x", "thread": 987654}, format="json").status_code == 404
    assert api.post(url, {"message": "x" * 100_001}, format="json").status_code == 400


def test_a_model_error_fails_the_step_with_a_clear_message(chatbot, chat, fake_llm, api):
    fake_llm.responder = lambda request: Reply(status=401, text="invalid api key")
    turn = chat(chatbot["id"], "hi")
    assert turn["status"] == "failed" and turn["reply"] == ""
    run = api.get(f"/api/runs/{turn['run']}/").json()
    assert "agent" in run["error"] and "invalid api key" in run["error"]
    agent = next(s for s in run["steps"] if s["node"] == "agent")
    assert agent["status"] == "failed" and "invalid api key" in agent["error"]
    assert "out" not in [s["node"] for s in run["steps"]]
    # the participant's message is kept even though the turn failed
    transcript = api.get(f"/api/threads/{turn['thread']}/messages/").json()
    assert [(m["role"], m["content"]) for m in transcript] == [("user", "hi")]
    assert len(fake_llm.requests) == 1  # 401 is not transient: no retry


@override_settings(SKEIN_LLM_RETRIES=2)
def test_transient_errors_are_retried(chatbot, chat, fake_llm):
    answers = iter([Reply(status=500, text="overloaded"), Reply(status=503), Reply(text="finally")])
    fake_llm.responder = lambda request: next(answers)
    turn = chat(chatbot["id"], "hi")
    assert turn["reply"] == "finally" and len(fake_llm.requests) == 3


@override_settings(SKEIN_LLM_RETRIES=1)
def test_transient_errors_give_up_after_the_retries(chatbot, chat, fake_llm):
    fake_llm.responder = lambda request: Reply(status=500, text="down")
    turn = chat(chatbot["id"], "hi")
    assert turn["status"] == "failed" and "down" in turn["error"] and len(fake_llm.requests) == 2


@override_settings(SKEIN_LLM_TIMEOUT_S=1, SKEIN_LLM_RETRIES=0)
def test_a_hanging_model_times_out(chatbot, chat, fake_llm):
    fake_llm.responder = lambda request: Reply(text="too late", delay=5)
    turn = chat(chatbot["id"], "hi")
    assert turn["status"] == "failed" and "agent-model" in turn["error"]
    assert "timeout" in turn["error"].lower() or "timed out" in turn["error"].lower()


def test_a_redelivered_turn_runs_once(chatbot, chat, fake_llm):
    """A worker died mid-turn: the run is RUNNING with a partial step and the user message written.
    Delivering the task again finishes it exactly once; delivering it a third time does nothing."""
    from runs import turns

    turn = chat(chatbot["id"], "first")
    thread = Thread.objects.get(pk=turn["thread"])
    version = Run.objects.get(pk=turn["run"]).version
    run = Run.objects.create(
        workflow_id=chatbot["id"],
        version=version,
        thread=thread,
        trigger="chat",
        trigger_node="chat",
        input="second",
        status=Run.Status.RUNNING,
        attempts=1,
    )
    with transaction.atomic():
        turns._transcript_append(run, role="user", content="second")
    RunStep.objects.create(run=run, node="chat", type="trigger.chat", position=1, status="running")

    turns.turn_process(run_id=run.pk)
    turns.turn_process(run_id=run.pk)

    run.refresh_from_db()
    assert run.status == "succeeded" and run.output == "echo: second" and run.attempts == 2
    assert [(m.role, m.content) for m in Message.objects.filter(thread=thread).order_by("seq")] == [
        ("user", "first"),
        ("assistant", "echo: first"),
        ("user", "second"),
        ("assistant", "echo: second"),
    ]
    assert RunStep.objects.filter(run=run).count() == 3
    assert len(fake_llm.requests_for("agent-model")) == 2


def test_queued_turns_of_a_thread_run_in_arrival_order(chatbot, chat):
    """Turns queued on a thread are drained oldest first, whichever task gets to run."""
    from runs import services as runs
    from runs import turns

    turn = chat(chatbot["id"], "first")
    thread = Thread.objects.get(pk=turn["thread"])
    version = Run.objects.get(pk=turn["run"]).version
    runs = [
        Run.objects.create(workflow_id=chatbot["id"], version=version, thread=thread, trigger="chat", trigger_node="chat", input=f"q{i}")
        for i in range(3)
    ]
    turns.turn_process(run_id=runs[-1].pk)  # the newest task arrives first
    contents = list(Message.objects.filter(thread=thread).order_by("seq").values_list("content", flat=True))
    assert contents == ["first", "echo: first", "q0", "echo: q0", "q1", "echo: q1", "q2", "echo: q2"]


def test_manual_trigger_and_templates_use_the_payload(make_workflow, provider, api):
    from runs import services as runs
    from workflows.models import Workflow

    graph = {
        "nodes": [node("go", "trigger.manual"), node("t", "template", template="{{ input }} for {{ payload.who }}"), node("out", "output")],
        "edges": [edge("go", "t"), edge("t", "out")],
    }
    workflow = Workflow.objects.get(pk=make_workflow(graph)["id"])
    version = workflow_services.draft_snapshot(workflow=workflow)
    run = runs.run_create(version=version, trigger="manual", input_text="report", payload={"who": "Ann"})
    run.refresh_from_db()
    assert run.status == "succeeded" and run.output == "report for Ann" and run.thread_id is None


def test_orphaned_turns_are_recovered_unless_someone_is_running_them(chatbot, chat):
    """The periodic sweep re-enqueues unfinished runs whose turn lock is free."""
    from datetime import timedelta

    from django.utils import timezone

    from runs import locks
    from runs import services as runs

    turn = chat(chatbot["id"], "first")
    thread = Thread.objects.get(pk=turn["thread"])
    version = Run.objects.get(pk=turn["run"]).version
    lost = Run.objects.create(workflow_id=chatbot["id"], version=version, thread=thread, trigger="chat", trigger_node="chat", input="lost")
    Run.objects.filter(pk=lost.pk).update(created=timezone.now() - timedelta(minutes=5))

    # Another worker (here: another thread, with its own database connection) is running the thread.
    import threading

    from django.db import connection

    holding, release = threading.Event(), threading.Event()

    def hold():
        with locks.try_turn_lock(locks.THREAD_SCOPE, thread.pk) as held:
            assert held
            holding.set()
            release.wait(timeout=30)
        connection.close()

    holder = threading.Thread(target=hold)
    holder.start()
    holding.wait(timeout=30)
    try:
        assert runs.turns_recover(older_than_s=60) == []  # busy: left alone
    finally:
        release.set()
        holder.join()
    assert Run.objects.get(pk=lost.pk).status == "queued"

    assert runs.turns_recover(older_than_s=60) == [lost.pk]
    assert Run.objects.get(pk=lost.pk).output == "echo: lost"
    assert runs.turns_recover(older_than_s=60) == []


def test_a_model_reply_with_a_nul_character_is_kept_readable(chatbot, chat, fake_llm, api):
    fake_llm.responder = lambda request: Reply(text="bad\x00byte")
    turn = chat(chatbot["id"], "hi")
    assert turn["status"] == "succeeded" and turn["reply"] == "bad\ufffdbyte"
    assert api.get(f"/api/threads/{turn['thread']}/messages/").json()[1]["content"] == "bad\ufffdbyte"
