"""Threads as objects (list, search, rename, delete) and daily spend limits."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from prometheus_client import REGISTRY

from memory.models import History, HistoryMessage
from runs import limits
from runs.models import Message, Run, Thread
from tests.fakellm import Reply
from tests.graphs import chat_graph
from tests.openai_client import api_token, client_for  # noqa: F401
from tests.realtime_fixtures import communicator, is_type, published, receive_until  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


# --- threads --------------------------------------------------------------------------------------
def test_threads_are_listed_filtered_searched_and_paginated(api, chatbot, chat, make_workflow, provider):
    other = make_workflow(chat_graph(provider.pk), name="other")
    first = chat(chatbot["id"], "about llamas")
    chat(chatbot["id"], "more llamas", thread=first["thread"])
    second = chat(chatbot["id"], "about whales")
    third = chat(other["id"], "llamas elsewhere")
    listed = api.get("/api/threads/").json()
    assert listed["count"] == 3 and [t["id"] for t in listed["results"]] == [third["thread"], second["thread"], first["thread"]]
    entry = listed["results"][2]
    assert entry["workflow"] == chatbot["id"] and entry["workflow_name"] == "test workflow" and entry["message_count"] == 4
    assert entry["title"] == "about llamas" and entry["source"] == "chat"
    assert [t["id"] for t in api.get(f"/api/threads/?workflow={chatbot['id']}").json()["results"]] == [second["thread"], first["thread"]]
    # search finds words in any message (the model's replies too), case-insensitively
    assert {t["id"] for t in api.get("/api/threads/?search=LLAMAS").json()["results"]} == {first["thread"], third["thread"]}
    assert [t["id"] for t in api.get(f"/api/threads/?search=echo: more&workflow={chatbot['id']}").json()["results"]] == [first["thread"]]
    page = api.get("/api/threads/?limit=2&offset=2").json()
    assert page["count"] == 3 and [t["id"] for t in page["results"]] == [first["thread"]] and page["previous"]
    assert api.get("/api/threads/?workflow=abc").status_code == 400
    assert api.get("/api/threads/?search=" + "x" * 201).status_code == 400


def test_a_thread_is_renamed_and_deleted_with_its_transcript_memory_and_runs(api, make_workflow, provider, chat):
    bot = make_workflow(chat_graph(provider.pk, memory={"type": "memory.buffer", "history": "node"}))
    kept = chat(bot["id"], "keep me")
    turn = chat(bot["id"], "forget me")
    chat(bot["id"], "and this", thread=turn["thread"])
    renamed = api.patch(f"/api/threads/{turn['thread']}/", {"title": "To forget"}, format="json")
    assert renamed.status_code == 200 and renamed.json()["title"] == "To forget"
    assert api.get(f"/api/threads/{turn['thread']}/").json()["title"] == "To forget"
    assert api.patch(f"/api/threads/{turn['thread']}/", {"title": "x" * 201}, format="json").status_code == 400
    key = f"thread:{turn['thread']}"
    assert History.objects.filter(key=key).count() == 2  # the global and the node's own history

    assert api.delete(f"/api/threads/{turn['thread']}/").status_code == 204
    assert not Thread.objects.filter(pk=turn["thread"]).exists()
    assert not Message.objects.filter(thread_id=turn["thread"]).exists()
    assert not History.objects.filter(key=key).exists()
    assert not HistoryMessage.objects.filter(content__contains="forget me").exists()
    assert not Run.objects.filter(input__in=["forget me", "and this"]).exists()
    assert api.get(f"/api/threads/{turn['thread']}/messages/").status_code == 404
    # the other thread is untouched
    assert (
        Message.objects.filter(thread_id=kept["thread"]).count() == 2
        and History.objects.filter(key=f"thread:{kept['thread']}").count() == 2
    )


def test_a_thread_with_a_turn_in_progress_is_not_deleted(api, chatbot, chat):
    turn = chat(chatbot["id"], "hi")
    run = Run.objects.get(pk=turn["run"])
    Run.objects.filter(pk=run.pk).update(status=Run.Status.RUNNING)
    response = api.delete(f"/api/threads/{turn['thread']}/")
    assert response.status_code == 409 and "still running" in response.json()["detail"]
    assert Thread.objects.filter(pk=turn["thread"]).exists() and Message.objects.filter(thread_id=turn["thread"]).count() == 2


# --- spend limits ---------------------------------------------------------------------------------
def test_limits_are_set_and_show_todays_use(api, chatbot, chat):
    url = f"/api/workflows/{chatbot['id']}/limits/"
    empty = api.get(url).json()
    assert empty["workflow"] == {"tokens": None, "cost": None} and empty["today"] == {"tokens": 0, "cost": 0.0, "runs": 0, "refused": 0}
    chat(chatbot["id"], "hi")
    updated = api.patch(url, {"workflow": {"tokens": 1000}, "visitor": {"cost": 0.5}}, format="json").json()
    assert updated["workflow"] == {"tokens": 1000, "cost": None} and updated["visitor"] == {"tokens": None, "cost": 0.5}
    assert updated["caller"] == {"tokens": None, "cost": None}
    assert updated["today"]["tokens"] == 13 and updated["today"]["runs"] == 1
    cleared = api.patch(url, {"visitor": None}, format="json").json()
    assert cleared["visitor"] == {"tokens": None, "cost": None} and cleared["workflow"]["tokens"] == 1000
    for bad in (
        {"workflow": {"tokens": 0}},
        {"workflow": {"tokens": -5}},
        {"visitor": {"cost": -1}},
        {"caller": {"tokens": "many"}},
        {"workflow": "x"},
    ):
        assert api.patch(url, bad, format="json").status_code == 400, bad


def test_a_workflow_limit_refuses_the_turn_before_any_model_call(api, chatbot, chat, fake_llm):
    api.patch(f"/api/workflows/{chatbot['id']}/limits/", {"workflow": {"tokens": 20}}, format="json")
    assert chat(chatbot["id"], "hi")["status"] == "succeeded"  # 13 tokens
    assert chat(chatbot["id"], "hello")["status"] == "succeeded"  # 13 + 1 for the input fit: now 26
    calls = len(fake_llm.requests)
    refusals = REGISTRY.get_sample_value("skein_spend_refusals_total", {"scope": "workflow"}) or 0
    refused = chat(chatbot["id"], "again")
    assert REGISTRY.get_sample_value("skein_spend_refusals_total", {"scope": "workflow"}) == refusals + 1
    assert refused["status"] == "failed" and refused["error"].startswith(limits.REFUSAL_PREFIX)
    assert refused["warnings"][0]["message"].startswith("daily workflow spend limit reached (26 of 20 tokens")
    assert len(fake_llm.requests) == calls, "a refused turn calls no model"
    assert api.get(f"/api/workflows/{chatbot['id']}/limits/").json()["today"]["refused"] == 1
    # an input that alone would pass the limit is refused too, even under it
    api.patch(f"/api/workflows/{chatbot['id']}/limits/", {"workflow": {"tokens": 30}}, format="json")
    assert chat(chatbot["id"], "word " * 10)["status"] == "failed"
    assert chat(chatbot["id"], "ok")["status"] == "succeeded"


def test_a_cost_limit(api, make_workflow, provider, chat):
    import litellm

    litellm.register_model(
        {
            "openai/priced-model": {
                "input_cost_per_token": 0.001,
                "output_cost_per_token": 0.002,
                "litellm_provider": "openai",
                "mode": "chat",
            }
        }
    )
    bot = make_workflow(chat_graph(provider.pk, model="priced-model"))
    api.patch(f"/api/workflows/{bot['id']}/limits/", {"workflow": {"cost": 0.01}}, format="json")
    first = chat(bot["id"], "hi")
    assert first["status"] == "succeeded" and Run.objects.get(pk=first["run"]).cost == pytest.approx(0.015)
    assert chat(bot["id"], "hi")["status"] == "failed"


def test_a_visitor_limit_stops_one_visitor_with_a_message_they_can_read(api, published, fake_llm):
    api.patch(f"/api/workflows/{published['workflow']['id']}/limits/", {"visitor": {"tokens": 14}}, format="json")

    async def say(client, text):
        comm = communicator(f"/ws/widget/{published['key']}/", client=client)
        assert (await comm.connect(timeout=30))[0]
        await comm.receive_json_from(timeout=30)  # ready
        await comm.send_json_to({"type": "message", "text": text, "thread": None, "client_id": None})
        messages = await receive_until(comm, is_type("run.finished", "run.failed", "error"))
        await comm.disconnect()
        return messages[-1]

    assert async_to_sync(say)("10.0.0.1", "hi")["type"] == "run.finished"
    refused = async_to_sync(say)("10.0.0.1", "hi again")
    assert refused["type"] == "run.failed" and refused["data"]["error"] == limits.REFUSAL_PREFIX + limits._VISITOR_TEXT["visitor"]
    assert async_to_sync(say)("10.0.0.2", "hi")["type"] == "run.finished"  # another visitor is not affected
    run = Run.objects.filter(spender="visitor:10.0.0.1").order_by("-id").first()
    assert run.warnings[0]["node"] is None and "visitor spend limit" in run.warnings[0]["message"]
    # a model error stays the owner's business: visitors get the apology
    fake_llm.responder = lambda request: Reply(status=400, text="secret provider detail")
    failed = async_to_sync(say)("10.0.0.3", "hi")
    assert failed["type"] == "run.failed" and "secret" not in failed["data"]["error"]


def test_a_caller_limit_on_the_openai_endpoint(api, api_token, published, fake_llm):
    import openai

    bot = str(published["workflow"]["id"])
    api.patch(f"/api/workflows/{bot}/limits/", {"caller": {"tokens": 13}}, format="json")
    oai = client_for(api_token, max_retries=2)
    ask = lambda user: oai.chat.completions.create(model=bot, messages=[{"role": "user", "content": "hi"}], user=user)  # noqa: E731
    assert ask("ann").choices[0].message.content == "echo: hi"
    runs = Run.objects.count()
    with pytest.raises(openai.RateLimitError) as refused:
        ask("ann")
    assert refused.value.status_code == 429 and refused.value.code == "spend_limit_reached"
    assert refused.value.body["message"].startswith(limits.REFUSAL_PREFIX)
    assert Run.objects.count() == runs, "refused up front, and not retried"
    assert ask("bob").choices[0].message.content == "echo: hi"
