"""The widget: its settings API, its public config, and its socket (``WS /ws/widget/{key}/``).

Embedded mode (in-memory channel layer, eager Celery): a turn runs inside the socket's start call,
in its own thread, while the consumer streams the events.
"""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync

from runs.models import Message, Run, Thread
from tests.fakellm import Reply
from tests.graphs import edge, node
from tests.realtime_fixtures import SITE, WIDGET_JS, communicator, is_type, published, receive_until, tokens_of  # noqa: F401

realtime = pytest.mark.django_db(transaction=True)  # consumers use the database from other threads


def run_sync(coroutine_function):
    return async_to_sync(coroutine_function)()


async def connect(key, **kwargs):
    comm = communicator(f"/ws/widget/{key}/", **kwargs)
    connected, code = await comm.connect(timeout=30)
    assert connected, code
    ready = await comm.receive_json_from(timeout=30)
    assert ready["type"] == "ready"
    return comm, ready


async def say(comm, text, thread=None, client_id=None):
    await comm.send_json_to({"type": "message", "text": text, "thread": thread, "client_id": client_id})
    return await receive_until(comm, is_type("run.finished", "run.failed", "error"))


# --- settings API -------------------------------------------------------------------------------
@pytest.mark.django_db
def test_settings_give_a_key_and_an_embed_snippet(api, chatbot):
    response = api.get(f"/api/workflows/{chatbot['id']}/widget/")
    assert response.status_code == 200
    data = response.json()
    assert data["public_key"].startswith("wk_") and len(data["public_key"]) > 20
    assert data["published"] is False
    assert data["allowed_origins"] == []
    assert data["script_url"] == "http://testserver/widget.js"
    assert data["embed_snippet"] == f'<script src="http://testserver/widget.js" data-key="{data["public_key"]}" async></script>'
    assert api.post(f"/api/workflows/{chatbot['id']}/publish/").status_code == 201
    assert api.get(f"/api/workflows/{chatbot['id']}/widget/").json()["published"] is True


@pytest.mark.django_db
def test_settings_update_origins_and_theme(api, chatbot):
    url = f"/api/workflows/{chatbot['id']}/widget/"
    response = api.patch(
        url,
        {
            "allowed_origins": ["https://Example.com/", "http://localhost:8080", "https://example.com:443", "https://*.shop.io"],
            "theme": {"title": "Ask us", "color": "#0a7", "starters": ["Prices?", "Opening hours?"], "welcome": ""},
        },
        format="json",
    )
    assert response.status_code == 200, response.content
    data = response.json()
    assert data["allowed_origins"] == ["http://localhost:8080", "https://*.shop.io", "https://example.com"]
    assert data["theme"] == {"title": "Ask us", "color": "#0a7", "starters": ["Prices?", "Opening hours?"]}
    bad = api.patch(url, {"allowed_origins": ["example.com/path"]}, format="json")
    assert bad.status_code == 400 and "allowed_origins" in bad.json()
    assert api.patch(url, {"theme": {"position": "top"}}, format="json").status_code == 400
    assert api.patch(url, {"theme": {"starters": ["x"] * 7}}, format="json").status_code == 400


@realtime
def test_rotating_the_key_retires_the_old_one(api, published):
    old = published["key"]
    response = api.post(f"/api/workflows/{published['workflow']['id']}/widget/")
    assert response.status_code == 201
    new = response.json()["public_key"]
    assert new != old
    assert api.get(f"/api/widget/{old}/").status_code == 404

    async def scenario():
        comm = communicator(f"/ws/widget/{old}/")
        assert await comm.connect(timeout=30) == (False, 4404)
        comm, _ = await connect(new)
        await comm.disconnect()

    run_sync(scenario)


@pytest.mark.django_db
def test_settings_are_owner_only(other_api, chatbot):
    url = f"/api/workflows/{chatbot['id']}/widget/"
    assert other_api.get(url).status_code == 404
    assert other_api.patch(url, {"allowed_origins": []}, format="json").status_code == 404
    assert other_api.post(url).status_code == 404


@pytest.mark.django_db
def test_public_config_with_cors(api, published, client):
    key = published["key"]
    response = client.get(f"/api/widget/{key}/", HTTP_ORIGIN="http://anywhere.test")
    assert response.status_code == 200
    assert response["Access-Control-Allow-Origin"] == "http://anywhere.test"
    assert response.json() == {"key": key, "name": "test workflow", "theme": {"title": "test workflow"}}
    api.patch(f"/api/workflows/{published['workflow']['id']}/widget/", {"allowed_origins": [SITE]}, format="json")
    refused = client.get(f"/api/widget/{key}/", HTTP_ORIGIN="http://evil.test")
    assert refused.status_code == 403 and refused.json()["code"] == "origin_not_allowed"
    assert refused["Access-Control-Allow-Origin"] == "http://evil.test"  # so the widget can say why
    assert client.get(f"/api/widget/{key}/", HTTP_ORIGIN=SITE).status_code == 200
    assert client.get("/api/widget/wk_nope/").status_code == 404


@pytest.mark.django_db
def test_public_config_of_an_unpublished_workflow(api, chatbot, client):
    key = api.get(f"/api/workflows/{chatbot['id']}/widget/").json()["public_key"]
    response = client.get(f"/api/widget/{key}/")
    assert response.status_code == 409 and response.json()["code"] == "not_published"


@pytest.mark.django_db
def test_widget_script_is_served_as_utf8(client):
    assert WIDGET_JS.exists(), "build the widget first (cd frontend/widget && npm ci && npm run build; make test does)"
    response = client.get("/widget.js")
    assert response.status_code == 200
    # A page in another charset still reads the script's non-ASCII text ("…", "↻") right.
    assert response["Content-Type"] == "text/javascript; charset=utf-8"
    script = b"".join(response.streaming_content).decode("utf-8")
    assert "Connecting…" in script


# --- the socket ---------------------------------------------------------------------------------
@realtime
def test_a_visitor_chats_and_sees_the_reply_stream(published, fake_llm):
    fake_llm.responder = lambda request: Reply(text="Hello there, how can I help you today?", token_delay=0.005)

    async def scenario():
        comm, ready = await connect(published["key"])
        assert ready["data"]["key"] == published["key"]
        messages = await say(comm, "Hi!", client_id="c1")
        types = [m["type"] for m in messages]
        assert types[0] == "thread.created"
        token = messages[0]["data"]["thread"]
        assert types[1] == "accepted"
        run = messages[1]["data"]["run"]
        assert messages[1]["data"] == {"run": run, "client_id": "c1", "thread": token}
        assert types[2] == "run.started" and messages[2]["data"] == {"run": run, "thread": token}
        assert types[-1] == "run.finished"
        assert messages[-1]["data"] == {"run": run, "reply": "Hello there, how can I help you today?", "cut": False}
        assert "".join(tokens_of(messages)) == "Hello there, how can I help you today?"
        assert types.index("llm.token") < types.index("run.finished")
        # Nothing internal reaches a visitor: no node outputs, details, warnings or thread ids.
        for message in messages:
            assert set(message["data"]) <= {"run", "thread", "node", "type", "status", "text", "reply", "cut", "client_id"}
        await comm.disconnect()
        return token, run

    token, run = run_sync(scenario)
    thread = Thread.objects.get(widget_token=token)
    assert thread.owner_id == Run.objects.get(pk=run).workflow.owner_id
    assert Run.objects.get(pk=run).version.number == 1
    assert list(thread.messages.values_list("role", "content")) == [
        ("user", "Hi!"),
        ("assistant", "Hello there, how can I help you today?"),
    ]


@realtime
def test_only_the_published_version_runs(api, published, fake_llm):
    workflow = published["workflow"]
    graph = dict(workflow["graph"])
    graph["nodes"] = [dict(n, data={**n["data"], "model": "draft-model"}) if n["id"] == "agent" else n for n in graph["nodes"]]
    assert (
        api.patch(f"/api/workflows/{workflow['id']}/", {"graph": graph, "revision": workflow["revision"]}, format="json").status_code == 200
    )

    async def scenario():
        comm, _ = await connect(published["key"])
        messages = await say(comm, "which model?")
        assert messages[-1]["type"] == "run.finished"
        await comm.disconnect()

    run_sync(scenario)
    assert [r.model for r in fake_llm.requests] == ["agent-model"]


@realtime
def test_history_on_resume_and_the_conversation_continues(published, fake_llm):
    async def scenario():
        comm, _ = await connect(published["key"])
        first = await say(comm, "one", client_id="a")
        token = first[0]["data"]["thread"]
        await comm.disconnect()
        # A reload: a new connection asks for the thread's history.
        comm, _ = await connect(published["key"])
        await comm.send_json_to({"type": "sync", "thread": token, "after": 0})
        history = (await receive_until(comm, is_type("history")))[-1]["data"]
        assert history["thread"] == token and history["pending"] is None
        assert [(m["seq"], m["role"], m["content"]) for m in history["messages"]] == [(1, "user", "one"), (2, "assistant", "echo: one")]
        assert history["messages"][0]["client_id"] == "a"
        second = await say(comm, "two", thread=token, client_id="b")
        assert "thread.created" not in [m["type"] for m in second]
        assert second[-1]["data"]["reply"] == "echo: two"
        await comm.send_json_to({"type": "sync", "thread": token, "after": 2})
        later = (await receive_until(comm, is_type("history")))[-1]["data"]["messages"]
        assert [(m["seq"], m["content"]) for m in later] == [(3, "two"), (4, "echo: two")]
        await comm.disconnect()

    run_sync(scenario)


@realtime
def test_a_resent_message_runs_once(published, fake_llm):
    async def scenario():
        comm, _ = await connect(published["key"])
        first = await say(comm, "hello", client_id="same")
        token = first[0]["data"]["thread"]
        run = next(m for m in first if m["type"] == "accepted")["data"]["run"]
        await comm.disconnect()
        comm, _ = await connect(published["key"])
        await comm.send_json_to({"type": "message", "text": "hello", "thread": token, "client_id": "same"})
        accepted = (await receive_until(comm, is_type("accepted", "error")))[-1]
        assert accepted == {"type": "accepted", "data": {"run": run, "client_id": "same", "thread": token}}
        await comm.disconnect()
        return token

    token = run_sync(scenario)
    assert Message.objects.filter(thread__widget_token=token).count() == 2
    assert len(fake_llm.requests) == 1


@realtime
def test_threads_are_found_by_token_only(published, fake_llm, api):
    owners = api.post(f"/api/workflows/{published['workflow']['id']}/chat/", {"message": "owner's thread"}, format="json").json()

    async def scenario():
        comm, _ = await connect(published["key"])
        for token in ["not-a-token", str(owners["thread"]), "x" * 65]:
            await comm.send_json_to({"type": "sync", "thread": token, "after": 0})
            error = (await receive_until(comm, is_type("error", "history")))[-1]
            assert error["type"] == "error" and error["data"]["code"] == "unknown_thread"
            await comm.send_json_to({"type": "message", "text": "hi", "thread": token})
            error = (await receive_until(comm, is_type("error", "accepted")))[-1]
            assert error["data"]["code"] == "unknown_thread"
        await comm.disconnect()

    run_sync(scenario)


@realtime
def test_a_thread_of_another_widget_is_not_found(published, make_workflow, provider, api, fake_llm):
    from tests.graphs import chat_graph

    other = make_workflow(chat_graph(provider.pk), name="other bot")
    api.post(f"/api/workflows/{other['id']}/publish/")
    other_key = api.get(f"/api/workflows/{other['id']}/widget/").json()["public_key"]

    async def scenario():
        comm, _ = await connect(other_key)
        token = (await say(comm, "secret"))[0]["data"]["thread"]
        await comm.disconnect()
        comm, _ = await connect(published["key"])
        await comm.send_json_to({"type": "sync", "thread": token, "after": 0})
        assert (await receive_until(comm, is_type("error", "history")))[-1]["data"]["code"] == "unknown_thread"
        await comm.disconnect()

    run_sync(scenario)


@realtime
def test_origin_refused_at_handshake(api, published):
    api.patch(f"/api/workflows/{published['workflow']['id']}/widget/", {"allowed_origins": [SITE, "https://*.example.org"]}, format="json")

    async def scenario():
        for origin in ["http://evil.test", "http://site.test:8080", "https://example.org", None]:
            comm = communicator(f"/ws/widget/{published['key']}/", origin=origin)
            assert await comm.connect(timeout=30) == (False, 4403), origin
        for origin in [SITE, "https://shop.example.org", "http://SITE.test:80"]:
            comm, _ = await connect(published["key"], origin=origin)
            await comm.disconnect()

    run_sync(scenario)


@realtime
def test_unknown_key_and_unpublished_workflow_are_refused(api, chatbot):
    key = api.get(f"/api/workflows/{chatbot['id']}/widget/").json()["public_key"]

    async def scenario():
        assert await communicator("/ws/widget/wk_unknown/").connect(timeout=30) == (False, 4404)
        assert await communicator(f"/ws/widget/{key}/").connect(timeout=30) == (False, 4409)

    run_sync(scenario)


@realtime
def test_rate_limit_per_key_and_client(published, fake_llm, settings):
    settings.SKEIN_WIDGET_BURST = 2
    settings.SKEIN_WIDGET_RATE_PER_MINUTE = 1

    async def scenario():
        comm, _ = await connect(published["key"], client="10.0.0.7")
        first = await say(comm, "1")
        token = first[0]["data"]["thread"]
        await say(comm, "2", thread=token)
        refused = await say(comm, "3", thread=token, client_id="x")
        assert refused[-1]["type"] == "error"
        data = refused[-1]["data"]
        assert data["code"] == "rate_limited" and data["client_id"] == "x" and 0 < data["retry_after"] <= 60
        assert "try again" in data["message"]
        # another client of the same widget is not affected
        other, _ = await connect(published["key"], client="10.0.0.8")
        assert (await say(other, "hi"))[-1]["type"] == "run.finished"
        await other.disconnect()
        await comm.disconnect()

    run_sync(scenario)
    assert len(fake_llm.requests) == 3


@realtime
def test_bad_messages_get_clear_errors(published):
    async def scenario():
        comm, _ = await connect(published["key"])
        for payload, code in [
            ({"type": "message", "text": "   "}, "empty"),
            ({"type": "message", "text": "x" * 4001}, "too_long"),
            ({"type": "message", "text": 5}, "bad_request"),
            ({"type": "dance"}, "bad_request"),
        ]:
            await comm.send_json_to(payload)
            error = await comm.receive_json_from(timeout=30)
            assert error["type"] == "error" and error["data"]["code"] == code, (payload, error)
        await comm.send_json_to({"type": "ping"})
        assert await comm.receive_json_from(timeout=30) == {"type": "pong", "data": {}}
        await comm.disconnect()

    run_sync(scenario)


@realtime
def test_a_failed_turn_tells_the_visitor_without_internals(published, fake_llm):
    fake_llm.responder = lambda request: Reply(status=400, text="secret provider detail")

    async def scenario():
        comm, _ = await connect(published["key"])
        messages = await say(comm, "hi")
        assert messages[-1]["type"] == "run.failed"
        assert "secret" not in str(messages)
        await comm.disconnect()

    run_sync(scenario)


@realtime
def test_visitors_see_only_the_reply_tokens(make_workflow, provider, api, fake_llm):
    """llm (drafts) -> llm (writes the reply) -> output: only the second model's tokens stream."""
    graph = {
        "nodes": [
            node("chat", "trigger.chat"),
            node("draft", "llm", model="draft-model", provider=provider.pk),
            node("final", "llm", model="final-model", provider=provider.pk),
            node("out", "output"),
        ],
        "edges": [edge("chat", "draft"), edge("draft", "final"), edge("final", "out")],
    }
    workflow = make_workflow(graph)
    api.post(f"/api/workflows/{workflow['id']}/publish/")
    key = api.get(f"/api/workflows/{workflow['id']}/widget/").json()["public_key"]
    fake_llm.responder = lambda request: Reply(text="internal notes" if request.model == "draft-model" else "polished answer")

    async def scenario():
        comm, _ = await connect(key)
        messages = await say(comm, "hi")
        assert "".join(tokens_of(messages)) == "polished answer"
        assert {m["data"]["node"] for m in messages if m["type"] == "llm.token"} == {"final"}
        assert "internal notes" not in str(messages)
        await comm.disconnect()

    run_sync(scenario)


@realtime
def test_a_visitor_who_leaves_mid_reply_does_not_break_the_turn(published, fake_llm, monkeypatch):
    """The turn goes on without the socket; back again, the visitor gets the whole reply.

    Sends are slowed down so that the visitor leaves while the turn waits for one: cancelling
    the socket's start call then would cancel that send inside the turn (asgiref propagates it)."""
    import asyncio

    from channels.layers import InMemoryChannelLayer

    group_send = InMemoryChannelLayer.group_send

    async def slow_group_send(self, group, message):
        await asyncio.sleep(0.05)
        await group_send(self, group, message)

    monkeypatch.setattr(InMemoryChannelLayer, "group_send", slow_group_send)
    reply = " ".join(f"word{i}" for i in range(30))
    fake_llm.responder = lambda request: Reply(text=reply, token_delay=0.01)

    async def scenario():
        comm, _ = await connect(published["key"])
        await comm.send_json_to({"type": "message", "text": "long answer please", "thread": None, "client_id": "l1"})
        first = await receive_until(comm, is_type("llm.token"))
        token = first[0]["data"]["thread"]
        run = next(m for m in first if m["type"] == "accepted")["data"]["run"]
        await comm.disconnect()  # mid-reply
        comm, _ = await connect(published["key"])
        await comm.send_json_to({"type": "sync", "thread": token, "after": 0})
        history = (await receive_until(comm, is_type("history")))[-1]["data"]
        if history["pending"] == run:
            finished = (await receive_until(comm, is_type("run.finished", "run.failed")))[-1]
            assert finished == {"type": "run.finished", "data": {"run": run, "reply": reply, "cut": False}}
            await comm.send_json_to({"type": "sync", "thread": token, "after": 0})
            history = (await receive_until(comm, is_type("history")))[-1]["data"]
        assert [(m["role"], m["content"]) for m in history["messages"]] == [("user", "long answer please"), ("assistant", reply)]
        await comm.disconnect()

    run_sync(scenario)
