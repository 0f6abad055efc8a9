"""Realtime in the embedded mode: the owner's thread socket and the SSE chat stream."""

from __future__ import annotations

import json

import pytest
from asgiref.sync import async_to_sync

from tests.fakellm import Reply
from tests.graphs import chat_graph
from tests.realtime_fixtures import communicator, is_type, published, receive_until, session_cookie, tokens_of  # noqa: F401

realtime = pytest.mark.django_db(transaction=True)
REPLY = "The quick brown fox jumps over the lazy dog, again and again."


def parse_sse(body: str) -> list[dict]:
    events = []
    for block in body.split("\n\n"):
        lines = [line for line in block.split("\n") if line and not line.startswith(":")]
        if not lines:
            continue
        fields = dict(line.split(": ", 1) for line in lines)
        events.append({"type": fields["event"], "data": json.loads(fields["data"])})
    return events


def sse_post(client, path, body, **headers):
    response = client.post(path, body, content_type="application/json", **headers)
    if not response.streaming:
        return response, []

    async def read():
        return b"".join([chunk async for chunk in response.streaming_content])

    return response, parse_sse(async_to_sync(read)().decode())


# --- WS /ws/threads/{id}/ -----------------------------------------------------------------------
@realtime
def test_the_owner_receives_a_threads_events_in_order(user, chatbot, chat, fake_llm):
    first = chat(chatbot["id"], "hello")
    thread = first["thread"]
    cookie = session_cookie(user)
    fake_llm.responder = lambda request: Reply(text=REPLY, token_delay=0.002)

    async def scenario():
        comm = communicator(f"/ws/threads/{thread}/", origin="http://testserver", cookie=cookie)
        connected, _ = await comm.connect(timeout=30)
        assert connected
        from channels.db import database_sync_to_async

        from runs.models import Thread
        from runs.services import chat_start
        from workflows.models import Workflow

        workflow = await database_sync_to_async(Workflow.objects.get)(pk=chatbot["id"])
        thread_obj = await database_sync_to_async(Thread.objects.get)(pk=thread)
        run = await database_sync_to_async(chat_start, thread_sensitive=False)(workflow=workflow, message="again", thread=thread_obj)
        messages = await receive_until(comm, is_type("run.finished", "run.failed"))
        await comm.disconnect()
        return run.pk, messages

    run, messages = async_to_sync(scenario)()
    types = [m["type"] for m in messages]
    assert types[0] == "run.started" and messages[0]["data"]["thread"] == thread
    assert types[-1] == "run.finished" and messages[-1]["data"]["reply"] == REPLY
    assert "".join(tokens_of(messages, run)) == REPLY
    # the owner sees everything: node steps with their outputs
    started = [m["data"]["node"] for m in messages if m["type"] == "node.started"]
    finished = [m["data"]["node"] for m in messages if m["type"] == "node.finished"]
    assert started == finished == ["chat", "agent", "out"]
    agent_done = next(m for m in messages if m["type"] == "node.finished" and m["data"]["node"] == "agent")
    assert agent_done["data"]["output"] == REPLY
    assert types.index("node.started") < types.index("llm.token") < types.index("node.finished", types.index("llm.token"))
    assert all(m["data"]["run"] == run for m in messages)


@realtime
def test_the_thread_socket_is_owner_only(user, other_user, chatbot, chat):
    thread = chat(chatbot["id"], "hello")["thread"]

    async def scenario(cookie, origin="http://testserver"):
        comm = communicator(f"/ws/threads/{thread}/", origin=origin, cookie=cookie)
        result = await comm.connect(timeout=30)
        await comm.disconnect()
        return result

    assert async_to_sync(scenario)(None) == (False, 4401)
    assert async_to_sync(scenario)(session_cookie(other_user)) == (False, 4404)
    owner = session_cookie(user)
    assert async_to_sync(scenario)(owner, origin="http://evil.test") == (False, 4403)  # cross-site hijacking
    assert async_to_sync(scenario)(owner)[0] is True
    assert async_to_sync(scenario)(owner, origin=None)[0] is True  # not a browser page


@realtime
def test_the_run_socket_is_owner_only_and_forwards_its_events(user, other_user, chatbot, chat):
    from channels.db import database_sync_to_async

    from runs import events

    run = chat(chatbot["id"], "hello")["run"]

    async def scenario(cookie):
        comm = communicator(f"/ws/runs/{run}/", origin="http://testserver", cookie=cookie)
        connected, code = await comm.connect(timeout=30)
        if not connected:
            return code
        await database_sync_to_async(events.publish, thread_sensitive=False)(
            events.MEMORY_WARNING, {"node": "m", "message": "w"}, run_id=run, now=True
        )
        message = await comm.receive_json_from(timeout=30)
        await comm.disconnect()
        return message

    assert async_to_sync(scenario)(None) == 4401
    assert async_to_sync(scenario)(session_cookie(other_user)) == 4404
    assert async_to_sync(scenario)(session_cookie(user)) == {"type": "memory.warning", "data": {"run": run, "node": "m", "message": "w"}}


# --- POST /api/workflows/{id}/chat/stream/ ------------------------------------------------------
@realtime
def test_sse_streams_a_turn(api, chatbot, fake_llm):
    fake_llm.responder = lambda request: Reply(text=REPLY, token_delay=0.002)
    response, events = sse_post(api, f"/api/workflows/{chatbot['id']}/chat/stream/", {"message": "hi"})
    assert response.status_code == 200
    assert response["Content-Type"] == "text/event-stream"
    types = [e["type"] for e in events]
    assert types[0] == "accepted" and types[1] == "run.started" and types[-1] == "run.finished"
    run, thread = events[0]["data"]["run"], events[0]["data"]["thread"]
    assert all(e["data"]["run"] == run for e in events)
    assert "".join(tokens_of(events)) == REPLY
    assert events[-1]["data"]["reply"] == REPLY
    # the thread continues
    response, events = sse_post(api, f"/api/workflows/{chatbot['id']}/chat/stream/", {"message": "more", "thread": thread})
    assert events[0]["data"]["thread"] == thread and events[-1]["type"] == "run.finished"
    messages = api.get(f"/api/threads/{thread}/messages/").json()
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]


@realtime
def test_sse_with_token_auth_and_published_version(api, published, fake_llm, client, user):
    from rest_framework.authtoken.models import Token

    token = Token.objects.create(user=user)
    api.patch(
        f"/api/workflows/{published['workflow']['id']}/",
        {"name": "renamed", "revision": published["workflow"]["revision"]},
        format="json",
    )
    response, events = sse_post(
        client,
        f"/api/workflows/{published['workflow']['id']}/chat/stream/",
        {"message": "hi", "version": "published"},
        HTTP_AUTHORIZATION=f"Token {token.key}",
    )
    assert response.status_code == 200
    assert events[-1]["type"] == "run.finished" and events[-1]["data"]["reply"] == "echo: hi"
    from runs.models import Run

    assert Run.objects.get(pk=events[0]["data"]["run"]).version.number == 1


@realtime
def test_sse_reports_a_failed_turn(api, chatbot, fake_llm):
    fake_llm.responder = lambda request: Reply(status=400, text="bad model")
    _, events = sse_post(api, f"/api/workflows/{chatbot['id']}/chat/stream/", {"message": "hi"})
    assert events[-1]["type"] == "run.failed" and "bad model" in events[-1]["data"]["error"]


@pytest.mark.django_db
def test_sse_refusals_are_json(api, other_api, chatbot, make_workflow):
    url = f"/api/workflows/{chatbot['id']}/chat/stream/"
    assert api.post(url, {}, format="json").status_code == 400
    assert api.post(url, {"message": "hi", "thread": 999999}, format="json").status_code == 404
    unpublished = api.post(url, {"message": "hi", "version": "published"}, format="json")
    assert unpublished.status_code == 409 and unpublished.json()["code"] == "not_published"
    assert other_api.post(url, {"message": "hi"}, format="json").status_code == 404
    broken = make_workflow({"nodes": [{"id": "x", "type": "llm", "position": {"x": 0, "y": 0}, "data": {}}], "edges": []})
    invalid = api.post(f"/api/workflows/{broken['id']}/chat/stream/", {"message": "hi"}, format="json")
    assert invalid.status_code == 400 and invalid.json()["errors"]


@pytest.mark.django_db
def test_openapi_documents_the_stream_and_the_widget(api):
    schema = api.get("/api/schema/?format=json").json()
    stream = schema["paths"]["/api/workflows/{id}/chat/stream/"]["post"]
    assert "text/event-stream" in stream["responses"]["200"]["content"]
    assert "llm.token" in stream["responses"]["200"]["description"]
    assert "/api/workflows/{id}/widget/" in schema["paths"]
    assert "/api/widget/{public_key}/" in schema["paths"]


@realtime
def test_sse_says_when_a_summary_is_being_made(api, make_workflow, provider, fake_llm):
    from tests.test_memory import summary_responder

    fake_llm.responder = summary_responder
    graph = chat_graph(
        provider.pk,
        memory={"type": "memory.summary", "max_messages": 2, "keep_last": 0, "llm_source": "external"},
        summarizer={"model": "cheap-model", "provider": provider.pk},
    )
    workflow = make_workflow(graph)
    _, first = sse_post(api, f"/api/workflows/{workflow['id']}/chat/stream/", {"message": "one"})
    thread = first[0]["data"]["thread"]
    _, events = sse_post(api, f"/api/workflows/{workflow['id']}/chat/stream/", {"message": "two", "thread": thread})
    types = [e["type"] for e in events]
    assert types.index("memory.summarizing") < types.index("memory.summarized") < types.index("llm.token")
    summarizing = events[types.index("memory.summarizing")]["data"]
    assert summarizing == {"run": events[0]["data"]["run"], "node": "mem", "summarizer": "summarizer", "messages": 2}
