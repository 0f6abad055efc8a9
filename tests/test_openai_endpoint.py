"""The OpenAI-compatible endpoint (docs/ecosystem.md#the-openai-compatible-endpoint-v1), through the official ``openai`` client."""

from __future__ import annotations

import json

import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runs.models import Run, Thread
from tests.fakellm import Reply
from tests.graphs import chat_graph, edge, node
from tests.openai_client import api_token, client_for, oai, raw  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)  # streamed turns run in a thread of their own
REPLY = "The quick brown fox jumps over the lazy dog."


@pytest.fixture
def bot(api, make_workflow, provider):
    """A published chatbot with a buffer memory (global history) on its model; the draft then
    changes its system prompt, so what runs tells the published version from the draft."""
    workflow = make_workflow(chat_graph(provider.pk, system_prompt="Published prompt.", memory={"type": "memory.buffer"}))
    assert api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
    draft = chat_graph(provider.pk, system_prompt="Draft prompt.", memory={"type": "memory.buffer"})
    assert (
        api.put(f"/api/workflows/{workflow['id']}/", {"graph": draft, "revision": workflow["revision"]}, format="json").status_code == 200
    )
    return str(workflow["id"])


def sent(fake_llm) -> list[dict]:
    return fake_llm.requests[-1].messages


def test_models_lists_the_callers_published_workflows(oai, bot, make_workflow, provider):
    unpublished = make_workflow(chat_graph(provider.pk), name="draft only")
    listed = oai.models.list()
    assert [m.id for m in listed.data] == [bot]
    assert listed.data[0].object == "model" and listed.data[0].owned_by == "alice"
    assert oai.models.retrieve(bot).id == bot
    with pytest.raises(openai.NotFoundError):
        oai.models.retrieve(str(unpublished["id"]))


def test_a_completion_runs_the_published_version_and_answers_in_openais_shape(oai, bot, fake_llm):
    raw_response = oai.chat.completions.with_raw_response.create(model=bot, messages=[{"role": "user", "content": "hi"}], user="ann")
    completion = raw_response.parse()
    assert completion.object == "chat.completion" and completion.model == bot
    assert completion.choices[0].message.role == "assistant" and completion.choices[0].message.content == "echo: hi"
    assert completion.choices[0].finish_reason == "stop"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens, completion.usage.total_tokens) == (11, 2, 13)
    assert sent(fake_llm) == [{"role": "system", "content": "Published prompt."}, {"role": "user", "content": "hi"}]
    key = raw_response.headers["X-Skein-Thread"]
    run = Run.objects.get(pk=int(raw_response.headers["X-Skein-Run"]))
    assert run.version.number == 1 and run.thread.external_id == key and run.trigger == "chat"
    assert run.payload["participant"] == "ann" and run.payload["source"] == "openai" and run.spender == "caller:ann"
    assert completion.id == f"chatcmpl-skein-{run.pk}"


def test_a_stateless_client_seeds_a_new_thread_and_a_keyed_one_continues(oai, bot, fake_llm, api):
    history = [
        {"role": "system", "content": "You are Open WebUI's assistant."},
        {"role": "user", "content": "My name is Ann."},
        {"role": "assistant", "content": "Hello Ann!"},
        {"role": "user", "content": "What is my name?"},
    ]
    first = oai.chat.completions.with_raw_response.create(model=bot, messages=history)
    assert first.parse().choices[0].message.content == "echo: What is my name?"
    # the client's conversation is the model's history (its system message is not: the workflow's is)
    assert sent(fake_llm) == [
        {"role": "system", "content": "Published prompt."},
        {"role": "user", "content": "My name is Ann."},
        {"role": "assistant", "content": "Hello Ann!"},
        {"role": "user", "content": "What is my name?"},
    ]
    key = first.headers["X-Skein-Thread"]
    thread = Thread.objects.get(external_id=key)
    # the transcript holds what Skein answered; the seeded messages are in the global history
    assert [m["content"] for m in api.get(f"/api/threads/{thread.pk}/messages/").json()] == ["What is my name?", "echo: What is my name?"]
    memory = api.get(f"/api/threads/{thread.pk}/memory/mem/").json()["messages"]
    assert [m["content"] for m in memory] == ["My name is Ann.", "Hello Ann!", "What is my name?", "echo: What is my name?"]

    # with the key, the thread continues: the resent earlier messages are not added again
    again = history + [{"role": "assistant", "content": "echo: What is my name?"}, {"role": "user", "content": "And now?"}]
    second = oai.chat.completions.with_raw_response.create(model=bot, messages=again, extra_headers={"X-Skein-Thread": key})
    assert second.headers["X-Skein-Thread"] == key and second.parse().choices[0].message.content == "echo: And now?"
    assert sent(fake_llm)[1:] == [
        {"role": "user", "content": "My name is Ann."},
        {"role": "assistant", "content": "Hello Ann!"},
        {"role": "user", "content": "What is my name?"},
        {"role": "assistant", "content": "echo: What is my name?"},
        {"role": "user", "content": "And now?"},
    ]
    assert Thread.objects.filter(workflow_id=int(bot)).count() == 1
    # a key never seen before names a new conversation, seeded like a keyless one
    third = oai.chat.completions.with_raw_response.create(model=bot, messages=history, extra_headers={"X-Skein-Thread": "customer-42"})
    assert third.headers["X-Skein-Thread"] == "customer-42"
    assert Thread.objects.get(workflow_id=int(bot), external_id="customer-42").messages.count() == 2
    assert len(sent(fake_llm)) == 4


def test_streaming_sends_the_reply_as_chunks_ending_with_done(oai, raw, bot, fake_llm):
    fake_llm.responder = lambda request: Reply(text=REPLY, token_delay=0.002, prompt_tokens=7)
    with oai.chat.completions.with_streaming_response.create(
        model=bot, messages=[{"role": "user", "content": "tell me"}], stream=True, stream_options={"include_usage": True}
    ) as response:
        key = response.headers["X-Skein-Thread"]
        chunks = list(response.parse())
    assert all(c.object == "chat.completion.chunk" and c.model == bot for c in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == REPLY
    assert len([c for c in chunks if c.choices and c.choices[0].delta.content]) > 3, "tokens should arrive one by one"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.prompt_tokens == 7 and chunks[-1].usage.completion_tokens == len(REPLY.split())
    thread = Thread.objects.get(external_id=key)
    assert [m.content for m in thread.messages.order_by("seq")] == ["tell me", REPLY]
    assert Run.objects.get(thread=thread).version.number == 1
    # on the wire: data lines only, the last one [DONE]
    body = raw.post("/v1/chat/completions", json={"model": bot, "messages": [{"role": "user", "content": "x"}], "stream": True}).text
    lines = [line for line in body.splitlines() if line and not line.startswith(":")]
    assert all(line.startswith("data: ") for line in lines) and lines[-1] == "data: [DONE]"
    assert json.loads(lines[-2][6:])["choices"][0]["finish_reason"] == "stop"


def test_a_failed_turn_is_an_openai_error_and_is_not_retried(api_token, bot, fake_llm):
    fake_llm.responder = lambda request: Reply(status=400, text="the provider refused")
    retrying = client_for(api_token, max_retries=2)  # the SDK's default retries: x-should-retry stops them
    runs = Run.objects.count()
    with pytest.raises(openai.InternalServerError) as failed:
        retrying.chat.completions.create(model=bot, messages=[{"role": "user", "content": "hi"}])
    assert failed.value.status_code == 502 and failed.value.code == "run_failed"
    assert "the provider refused" in failed.value.message
    assert Run.objects.count() == runs + 1
    with pytest.raises(openai.APIError) as streamed:  # streaming: an error event ends the stream
        list(retrying.chat.completions.create(model=bot, messages=[{"role": "user", "content": "hi"}], stream=True))
    assert "the provider refused" in str(streamed.value)


def test_a_wrong_key_an_unknown_model_and_someone_elses_workflow(bot, oai, other_user, make_workflow, provider):
    from rest_framework.authtoken.models import Token

    with pytest.raises(openai.AuthenticationError) as wrong:
        client_for("not-a-token").chat.completions.create(model=bot, messages=[{"role": "user", "content": "hi"}])
    assert wrong.value.status_code == 401 and wrong.value.code == "invalid_api_key"
    with pytest.raises(openai.AuthenticationError):
        client_for("x" * 300).models.list()
    with pytest.raises(openai.NotFoundError) as unknown:
        oai.chat.completions.create(model="999999", messages=[{"role": "user", "content": "hi"}])
    assert unknown.value.code == "model_not_found" and unknown.value.body["type"] == "invalid_request_error"
    for model in ("gpt-4o", "", "-1", "1" * 40):
        with pytest.raises(openai.NotFoundError):
            oai.chat.completions.create(model=model, messages=[{"role": "user", "content": "hi"}])
    unpublished = make_workflow(chat_graph(provider.pk), name="draft only")
    with pytest.raises(openai.NotFoundError) as draft:
        oai.chat.completions.create(model=str(unpublished["id"]), messages=[{"role": "user", "content": "hi"}])
    assert "not published" in draft.value.message

    mallory = client_for(Token.objects.create(user=other_user).key)
    runs = Run.objects.count()
    with pytest.raises(openai.NotFoundError) as theirs:
        mallory.chat.completions.create(model=bot, messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(openai.NotFoundError) as missing:
        mallory.chat.completions.create(model="999999", messages=[{"role": "user", "content": "hi"}])
    assert theirs.value.body == {**missing.value.body, "message": missing.value.body["message"].replace("999999", bot)}
    assert mallory.models.list().data == [] and Run.objects.count() == runs


BAD_REQUESTS = [
    ("no messages", {"messages": []}, "messages"),
    ("messages missing", {"messages": None}, "messages"),
    ("no user message", {"messages": [{"role": "system", "content": "be nice"}, {"role": "assistant", "content": "hi"}]}, "messages"),
    ("empty user message", {"messages": [{"role": "user", "content": "  "}]}, "messages.0.content"),
    ("messages not a list", {"messages": "hi"}, "messages"),
    ("a message not an object", {"messages": ["hi"]}, "messages.0"),
    ("unknown role", {"messages": [{"role": "wizard", "content": "hi"}]}, "messages.0.role"),
    ("content a number", {"messages": [{"role": "user", "content": 5}]}, None),
    ("model a number", {"model": 5}, "model"),
    ("stream a string", {"stream": "yes"}, "stream"),
    ("n = 2", {"n": 2}, "n"),
    ("n a string", {"n": "1"}, "n"),
    ("tools", {"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]}, "tools"),
    ("tool_choice", {"tool_choice": "required"}, "tools"),
    ("a tool message", {"messages": [{"role": "user", "content": "a"}, {"role": "tool", "content": "r", "tool_call_id": "1"}]}, None),
    ("an image", {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "http://x/y.png"}}]}]}, None),
    ("user a number", {"user": 7}, "user"),
    ("a NUL", {"messages": [{"role": "user", "content": "a\u0000b"}]}, None),
    ("too long", {"messages": [{"role": "user", "content": "x" * 100_001}]}, None),
]


@pytest.mark.parametrize("name,change,param", BAD_REQUESTS, ids=[b[0] for b in BAD_REQUESTS])
def test_malformed_requests_are_openai_shaped_400s(raw, bot, fake_llm, name, change, param):
    body = {"model": bot, "messages": [{"role": "user", "content": "hi"}], **change}
    runs = Run.objects.count()
    response = raw.post("/v1/chat/completions", json=body)
    assert response.status_code == 400, (name, response.status_code, response.text)
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["type"] == "invalid_request_error" and error["message"]
    if param:
        assert error["param"] == param, error
    assert Run.objects.count() == runs and fake_llm.requests == []


def test_other_bad_requests_never_answer_500(raw, bot, oai):
    cases = [
        raw.post("/v1/chat/completions", content=b"{not json", headers={"Content-Type": "application/json"}),
        raw.post("/v1/chat/completions", content=b""),
        raw.post("/v1/chat/completions", json=[1, 2]),
        raw.post("/v1/chat/completions", content=b"\xff\xfe", headers={"Content-Type": "application/json"}),
        raw.post("/v1/chat/completions?version=abc", json={"model": bot, "messages": [{"role": "user", "content": "hi"}]}),
        raw.post(
            "/v1/chat/completions",
            json={"model": bot, "messages": [{"role": "user", "content": "hi"}]},
            headers={"X-Skein-Thread": "x" * 201},
        ),
    ]
    assert [r.status_code for r in cases] == [400] * 6, [r.text for r in cases]
    assert all(set(r.json()["error"]) == {"message", "type", "param", "code"} for r in cases)
    assert raw.get("/v1/chat/completions").status_code == 405
    assert raw.get("/v1/embeddings").status_code == 404 and raw.get("/v1/embeddings").json()["error"]["code"] == "unknown_url"
    assert (
        raw.post("/v1/chat/completions?version=9", json={"model": bot, "messages": [{"role": "user", "content": "hi"}]}).json()["error"][
            "code"
        ]
        == "version_not_found"
    )


def test_callers_may_pin_a_published_version(api, oai, bot, fake_llm):
    workflow = api.get(f"/api/workflows/{bot}/").json()
    assert api.post(f"/api/workflows/{bot}/publish/").status_code == 201  # version 2: the draft prompt
    oai.chat.completions.create(model=bot, messages=[{"role": "user", "content": "live"}])
    assert sent(fake_llm)[0]["content"] == "Draft prompt."
    pinned = oai.chat.completions.with_raw_response.create(
        model=bot, messages=[{"role": "user", "content": "old"}], extra_query={"version": 1}
    )
    assert sent(fake_llm)[0]["content"] == "Published prompt." and pinned.headers["X-Skein-Version"] == "1"
    oai.chat.completions.create(model=bot, messages=[{"role": "user", "content": "old"}], extra_headers={"X-Skein-Version": "1"})
    assert sent(fake_llm)[0]["content"] == "Published prompt."
    assert workflow["published_version"] == 1


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
FIELDS = st.sampled_from(["model", "messages", "stream", "n", "user", "tools", "tool_choice", "stream_options", "temperature", "functions"])


def test_whatever_the_body_the_answer_is_openai_shaped_and_never_a_500(raw, bot, fake_llm):
    """Generated bodies: each field of a valid request replaced by any JSON value, messages mangled."""
    seen = set()

    @given(
        changes=st.dictionaries(FIELDS, JSON, max_size=3),
        message=st.dictionaries(st.sampled_from(["role", "content", "name", "tool_calls"]), JSON, max_size=3),
    )
    @settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    def check(changes, message):
        body = {
            "model": bot,
            "messages": [{"role": "user", "content": "hi"}, message] if message else [{"role": "user", "content": "hi"}],
            **changes,
        }
        response = raw.post("/v1/chat/completions", json=body)
        seen.add(response.status_code)
        assert response.status_code < 500, (body, response.status_code, response.text[:300])
        if response.status_code != 200:
            assert set(response.json()["error"]) == {"message", "type", "param", "code"}, response.text
        elif not body.get("stream"):
            assert response.json()["object"] == "chat.completion"

    check()
    assert 400 in seen


def test_a_reply_not_written_by_one_model_streams_whole_at_the_end(oai, api, make_workflow, provider, fake_llm):
    graph = chat_graph(provider.pk)
    graph["nodes"].append(node("fmt", "template", 300, 100, template="Answer: {{ input }}"))
    graph["edges"] = [e for e in graph["edges"] if e["target"] != "out"] + [edge("agent", "fmt"), edge("fmt", "out")]
    workflow = make_workflow(graph)
    api.post(f"/api/workflows/{workflow['id']}/publish/")
    fake_llm.responder = lambda request: Reply(text="one two three", token_delay=0.001)
    chunks = list(oai.chat.completions.create(model=str(workflow["id"]), messages=[{"role": "user", "content": "x"}], stream=True))
    contents = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert contents == ["Answer: one two three"]  # the model's own tokens are not the reply: not streamed
