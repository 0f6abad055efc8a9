"""Memory that follows the participant (docs/participants.md#participants-memory-that-follows-the-person): who the participant is, memory keyed by
participant across threads, ``memory.facts`` (extraction, supersession, bound and fallback), the
participant and facts API, and forgetting a participant. On the fake model."""

from __future__ import annotations

import json
import re

import pytest
from django.test import override_settings

from memory import facts as fact_rules
from memory.models import Fact, FactExtraction, History, HistoryMessage
from participants.models import Participant
from runs.models import Run, Thread
from tests.fakellm import Reply
from tests.graphs import chat_graph, edge, node

pytestmark = pytest.mark.django_db(transaction=True)  # turns run in on_commit


# --- helpers ------------------------------------------------------------------------------------
def is_extraction(request) -> bool:
    return request.messages and fact_rules.ANSWER_FORMAT in request.messages[0]["content"]


FACT_PATTERNS = [
    (re.compile(r"my name is (\w+)", re.IGNORECASE), "name"),
    (re.compile(r"i live in (\w+)", re.IGNORECASE), "city"),
    (re.compile(r"i moved (?:from \w+ )?to (\w+)", re.IGNORECASE), "city"),
    (re.compile(r"i work at (\w+)", re.IGNORECASE), "employer"),
]


def extracting_responder(request) -> Reply:
    """The agent echoes; the extraction answers with the facts the exchange states."""
    if is_extraction(request):
        exchange = request.messages[-1]["content"].split("The latest exchange:", 1)[1]
        said = exchange.split("Participant:", 1)[1].split("\n\nAssistant:", 1)[0]
        facts = [{"key": key, "value": m.group(1)} for pattern, key in FACT_PATTERNS for m in [pattern.search(said)] if m]
        return Reply(text=json.dumps({"facts": facts}))
    return Reply(text=f"echo: {request.last_user}")


def agent_requests(fake_llm):
    return [r for r in fake_llm.requests_for("agent-model") if not is_extraction(r)]


def extraction_requests(fake_llm):
    return [r for r in fake_llm.requests if is_extraction(r)]


def facts_graph(provider_id, *, history: dict | None = None, **facts_params) -> dict:
    """chat -> agent -> out, with a memory.facts (and optionally a history memory) on the agent."""
    graph = chat_graph(provider_id, memory=history)
    graph["nodes"].append(node("facts", "memory.facts", 0, 200, **facts_params))
    graph["edges"].append(edge("facts", "agent", "memory", "memory"))
    return graph


@pytest.fixture
def say(api):
    def send(workflow_id, message, *, participant=None, thread=None, expect=200):
        body = (
            {"message": message}
            | ({"participant": participant} if participant is not None else {})
            | ({"thread": thread} if thread else {})
        )
        response = api.post(f"/api/workflows/{workflow_id}/chat/", body, format="json")
        assert response.status_code == expect, response.content
        return response.json()

    return send


def facts_message(request) -> str | None:
    found = [m["content"] for m in request.messages if m["role"] == "system" and m["content"].startswith(fact_rules.FACTS_PREFIX)]
    assert len(found) <= 1
    return found[0] if found else None


# --- identity -----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "bad, says",
    [
        ("x" * 201, "at most 200"),
        ("ana\nsmith", "control characters"),
        ("ana\x07", "control characters"),
        (42, "must be a string"),
        ("   ", "must not be empty"),
    ],
)
def test_a_bad_participant_id_is_a_clear_400(chatbot, say, bad, says):
    answer = say(chatbot["id"], "hello", participant=bad, expect=400)
    assert says in json.dumps(answer)
    assert not Participant.objects.exists() and not Run.objects.exists()


def test_runs_and_threads_carry_the_participant(chatbot, say, api):
    turn = say(chatbot["id"], "hello", participant="customer-42")
    participant = Participant.objects.get()
    assert participant.external_id == "customer-42"
    assert Run.objects.get(pk=turn["run"]).participant_id == participant.pk
    assert api.get(f"/api/threads/{turn['thread']}/").json()["participant"] == participant.pk
    # the thread's later turns are the participant's, named or not; another participant is refused
    again = say(chatbot["id"], "again", thread=turn["thread"])
    assert Run.objects.get(pk=again["run"]).participant_id == participant.pk
    refused = say(chatbot["id"], "hijack", participant="someone-else", thread=turn["thread"], expect=409)
    assert "another participant" in refused["detail"]


def test_the_streaming_chat_api_names_the_participant(make_workflow, provider, api, fake_llm):
    from tests.test_firsthour import stream_ending

    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.buffer", "key": "participant"}))
    url = f"/api/workflows/{workflow['id']}/chat/stream/"
    first = stream_ending(api.post(url, {"message": "I am streamed", "participant": "streamer"}, format="json"))
    run = Run.objects.get(pk=first["run"])
    assert run.participant.external_id == "streamer" and run.thread.participant_id == run.participant_id
    stream_ending(api.post(url, {"message": "a new thread", "participant": "streamer"}, format="json"))
    assert {"role": "user", "content": "I am streamed"} in agent_requests(fake_llm)[-1].messages
    refused = api.post(url, {"message": "hijack", "participant": "other", "thread": run.thread_id}, format="json")
    assert refused.status_code == 409 and refused.json()["code"] == "participant_mismatch"
    assert api.post(url, {"message": "x", "participant": "a\u0000b"}, format="json").status_code == 400


def test_webhook_and_openai_user_name_the_participant(api, make_workflow, provider, client):
    graph = chat_graph(provider.pk)
    graph["nodes"].append(node("hook", "trigger.webhook", 0, 100))
    graph["edges"].append(edge("hook", "agent"))
    workflow = make_workflow(graph)
    assert api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
    url = next(t["webhook_url"] for t in api.get(f"/api/workflows/{workflow['id']}/").json()["triggers"] if t["type"] == "trigger.webhook")
    path = url.split("testserver", 1)[1]
    answer = client.post(path + "?wait=1", {"message": "hi", "participant": "crm-7"}, content_type="application/json")
    assert answer.status_code == 200, answer.content
    assert Run.objects.get(pk=answer.json()["run"]).participant.external_id == "crm-7"
    bad = client.post(path, {"message": "hi", "participant": "a\x01b"}, content_type="application/json")
    assert bad.status_code == 400 and "control characters" in bad.json()["detail"]

    token = api.post("/api/auth/token/", {"username": "alice", "password": "alice-password"}, format="json").json()["token"]
    body = {"model": str(workflow["id"]), "messages": [{"role": "user", "content": "hello"}], "user": "crm-7"}
    response = client.post("/v1/chat/completions", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 200, response.content
    run = Run.objects.get(pk=int(response["X-Skein-Run"]))
    assert run.participant.external_id == "crm-7" and run.thread.participant_id == run.participant_id
    assert Participant.objects.count() == 1
    body["user"] = "x" * 201
    response = client.post("/v1/chat/completions", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert response.status_code == 400 and response.json()["error"]["param"] == "user"


# --- key: participant -----------------------------------------------------------------------------
def test_participant_keyed_memory_continues_across_three_threads(make_workflow, provider, say, fake_llm):
    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.buffer", "key": "participant"}))
    first = say(workflow["id"], "my name is Ana", participant="ana")
    second = say(workflow["id"], "I live in Lisbon", participant="ana")
    assert first["thread"] != second["thread"] and first["warnings"] == []
    other = say(workflow["id"], "I am Bruno", participant="bruno")
    third = say(workflow["id"], "what do you know?", participant="ana")
    assert len({first["thread"], second["thread"], third["thread"], other["thread"]}) == 4
    sent = agent_requests(fake_llm)[-1].messages
    assert sent == [
        {"role": "system", "content": "You are a test bot."},
        {"role": "user", "content": "my name is Ana"},
        {"role": "assistant", "content": "echo: my name is Ana"},
        {"role": "user", "content": "I live in Lisbon"},
        {"role": "assistant", "content": "echo: I live in Lisbon"},
        {"role": "user", "content": "what do you know?"},
    ]
    # Bruno's thread started with nothing of Ana's
    assert agent_requests(fake_llm)[2].messages[1:] == [{"role": "user", "content": "I am Bruno"}]
    # each thread's transcript is its own
    assert Thread.objects.get(pk=third["thread"]).messages.count() == 2


def test_participant_keyed_summary_and_window_follow_their_rules(make_workflow, provider, say, fake_llm):
    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.window", "key": "participant", "max_messages": 2}))
    for text in ("one", "two", "three"):
        say(workflow["id"], text, participant="p")  # three threads
    assert agent_requests(fake_llm)[-1].messages[1:] == [
        {"role": "user", "content": "two"},
        {"role": "assistant", "content": "echo: two"},
        {"role": "user", "content": "three"},
    ]


def test_a_run_with_no_participant_falls_back_to_the_thread_and_says_so(make_workflow, provider, say, fake_llm, api):
    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.buffer", "key": "participant"}))
    first = say(workflow["id"], "remember me")
    assert first["warnings"] == [
        {"node": "mem", "message": "this run has no participant: memory keyed by participant is kept by the thread instead"}
    ]
    assert api.get(f"/api/runs/{first['run']}/").json()["warnings"] == first["warnings"]
    say(workflow["id"], "second", thread=first["thread"])
    assert agent_requests(fake_llm)[-1].messages[1:] == [
        {"role": "user", "content": "remember me"},
        {"role": "assistant", "content": "echo: remember me"},
        {"role": "user", "content": "second"},
    ]
    say(workflow["id"], "a new thread")
    assert agent_requests(fake_llm)[-1].messages[1:] == [{"role": "user", "content": "a new thread"}]


# --- memory.facts -------------------------------------------------------------------------------
def test_facts_are_extracted_after_a_turn_and_sent_in_the_next_thread(make_workflow, provider, say, fake_llm, api):
    fake_llm.responder = extracting_responder
    workflow = make_workflow(facts_graph(provider.pk, history={"type": "memory.buffer"}))
    assert workflow["errors"] == []
    first = say(workflow["id"], "Hi, my name is Ana and I live in Lisbon", participant="ana")
    assert first["warnings"] == []
    assert facts_message(agent_requests(fake_llm)[0]) is None  # nothing known yet
    facts = {f.name: f for f in Fact.objects.all()}
    assert {n: f.value for n, f in facts.items()} == {"name": "Ana", "city": "Lisbon"}
    assert facts["city"].source_message == "Hi, my name is Ana and I live in Lisbon" and facts["city"].run_id == first["run"]

    # the extraction request is recorded exactly as sent, and shown in the run detail
    extraction = extraction_requests(fake_llm)[0]
    assert extraction.model == "agent-model" and extraction.body.get("temperature") == 0.2
    detail = api.get(f"/api/runs/{first['run']}/").json()
    assert detail["extractions"][0]["messages"] == extraction.messages
    assert detail["extractions"][0] | {"messages": None, "duration_ms": 0, "reply": None} == {
        "node": "facts",
        "status": "ok",
        "model": "agent-model",
        "added": 2,
        "updated": 0,
        "prompt_tokens": 11,
        "completion_tokens": detail["extractions"][0]["completion_tokens"],
        "duration_ms": 0,
        "error": "",
        "messages": None,
        "reply": None,
    }
    assert "Participant: Hi, my name is Ana and I live in Lisbon" in extraction.messages[1]["content"]
    assert "Assistant: echo: Hi, my name is Ana and I live in Lisbon" in extraction.messages[1]["content"]

    # a new thread of the same participant: the facts come first, as one system message, before the history
    say(workflow["id"], "what is my name?", participant="ana")
    sent = agent_requests(fake_llm)[-1].messages
    assert sent == [
        {"role": "system", "content": "You are a test bot."},
        {"role": "system", "content": fact_rules.FACTS_PREFIX + "- name: Ana\n- city: Lisbon"},
        {"role": "user", "content": "what is my name?"},
    ]
    # and the known facts go to the next extraction
    assert '"city": "Lisbon"' in extraction_requests(fake_llm)[-1].messages[1]["content"]
    # another participant knows none of it
    say(workflow["id"], "who am I?", participant="bruno")
    assert facts_message(agent_requests(fake_llm)[-1]) is None


def test_a_changed_fact_supersedes_the_old_one(make_workflow, provider, say, fake_llm, api):
    fake_llm.responder = extracting_responder
    workflow = make_workflow(facts_graph(provider.pk))
    say(workflow["id"], "I live in Lisbon", participant="ana")
    moved = say(workflow["id"], "I moved from Lisbon to Porto", participant="ana")
    say(workflow["id"], "where do I live?", participant="ana")
    sent = facts_message(agent_requests(fake_llm)[-1])
    assert sent == fact_rules.FACTS_PREFIX + "- city: Porto"
    lisbon, porto = Fact.objects.order_by("id")
    assert lisbon.value == "Lisbon" and lisbon.superseded is not None and lisbon.superseded_by_id == porto.pk
    assert porto.value == "Porto" and porto.superseded is None and porto.source_message == "I moved from Lisbon to Porto"
    assert api.get(f"/api/runs/{moved['run']}/").json()["extractions"][0]["updated"] == 1
    participant = Participant.objects.get()
    listed = api.get(f"/api/participants/{participant.pk}/facts/").json()
    assert [(f["value"], f["current"]) for f in listed] == [("Porto", True), ("Lisbon", False)]
    assert [f["value"] for f in api.get(f"/api/participants/{participant.pk}/facts/?current=true").json()] == ["Porto"]


def test_max_facts_bounds_the_new_facts_with_a_warning(make_workflow, provider, say, fake_llm):
    fake_llm.responder = extracting_responder
    workflow = make_workflow(facts_graph(provider.pk, max_facts=1))
    turn = say(workflow["id"], "my name is Ana and I live in Lisbon", participant="ana")
    assert [f.name for f in Fact.objects.all()] == ["name"]
    assert turn["warnings"] == [{"node": "facts", "message": "1 new fact(s) left out: this memory keeps at most 1 facts"}]
    # a changed value still replaces the kept one
    say(workflow["id"], "my name is Anna", participant="ana")
    assert list(Fact.objects.filter(superseded__isnull=True).values_list("value", flat=True)) == ["Anna"]


@override_settings(SKEIN_SUMMARY_TIMEOUT_S=1)
def test_a_hanging_extraction_is_ended_at_its_bound_and_the_turn_answers(make_workflow, provider, say, fake_llm, api):
    def responder(request):
        if is_extraction(request):
            return Reply(text='{"facts": [{"key": "city", "value": "Late"}]}', delay=4)
        return Reply(text=f"echo: {request.last_user}")

    fake_llm.responder = responder
    workflow = make_workflow(facts_graph(provider.pk))
    turn = say(workflow["id"], "I live in Lisbon", participant="ana")
    assert turn["status"] == "succeeded" and turn["reply"] == "echo: I live in Lisbon"
    assert turn["warnings"] == [
        {"node": "facts", "message": "fact extraction failed (the fact extraction did not answer within 1s); the facts stay as they were"}
    ]
    assert not Fact.objects.exists()
    extraction = api.get(f"/api/runs/{turn['run']}/").json()["extractions"][0]
    assert extraction["status"] == "failed" and extraction["duration_ms"] < 3000
    assert extraction["messages"] == extraction_requests(fake_llm)[0].messages
    # the next turn tries again
    fake_llm.responder = extracting_responder
    again = say(workflow["id"], "I live in Lisbon", participant="ana")
    assert again["warnings"] == [] and Fact.objects.get().value == "Lisbon"


def test_a_failing_or_unreadable_extraction_warns_and_retries_inside_the_bound(make_workflow, provider, say, fake_llm):
    attempts = []

    def responder(request):
        if is_extraction(request):
            attempts.append(1)
            return Reply(status=503, text="overloaded") if len(attempts) == 1 else Reply(text="I think the city is Lisbon")
        return Reply(text="ok")

    fake_llm.responder = responder
    workflow = make_workflow(facts_graph(provider.pk))
    turn = say(workflow["id"], "I live in Lisbon", participant="ana")
    assert len(attempts) == 2  # a 503 is retried within the bound
    assert turn["reply"] == "ok" and "the extraction answer is not JSON" in turn["warnings"][0]["message"]
    assert FactExtraction.objects.get().reply == "I think the city is Lisbon"


def test_extracted_values_that_are_not_text_are_read_or_left_out():
    found = fact_rules.parse_answer(
        '```json\n{"facts": [{"key": "Age", "value": 41}, {"key": "pets", "value": ["cat"]},'
        ' {"key": "vegan", "value": true}, {"value": "no key"}, "junk"]}\n```'
    )
    assert [(f.name, f.value) for f in found] == [("age", "41"), ("vegan", "yes")]
    assert [(f.name, f.value) for f in fact_rules.parse_answer('{"Home Town": "Braga"}')] == [("home_town", "Braga")]
    with pytest.raises(fact_rules.BadAnswer):
        fact_rules.parse_answer("no json here")


def test_external_extractor_and_save_time_errors(make_workflow, provider, say, fake_llm):
    fake_llm.responder = extracting_responder
    broken = make_workflow(facts_graph(provider.pk, llm_source="external"))
    assert {"node": "facts", "field": "llm", "message": "llm_source is external: attach an llm.model node to the llm port"} in broken[
        "errors"
    ]
    say(broken["id"], "hi", participant="ana", expect=400)

    lonely = chat_graph(provider.pk)
    lonely["nodes"].append(node("facts", "memory.facts", 0, 200))
    errors = make_workflow(lonely)["errors"]
    assert any(e["node"] == "facts" and e["field"] == "llm_source" for e in errors)

    two = facts_graph(provider.pk, history={"type": "memory.buffer"})
    two["nodes"].append(node("mem2", "memory.window", 0, 300))
    two["edges"].append(edge("mem2", "agent", "memory", "memory"))
    assert any(e["node"] == "agent" and "one history memory" in e["message"] for e in make_workflow(two)["errors"])

    bad = make_workflow(facts_graph(provider.pk, max_facts=0, key="run"))["errors"]
    assert {e["field"] for e in bad if e["node"] == "facts"} == {"max_facts", "key"}

    graph = facts_graph(provider.pk, llm_source="external")
    graph["nodes"].append(node("cheap", "llm.model", 0, 400, model="cheap-model", provider=provider.pk, temperature=0))
    graph["edges"].append(edge("cheap", "facts", "llm", "llm"))
    workflow = make_workflow(graph)
    assert workflow["errors"] == []
    say(workflow["id"], "I live in Lisbon", participant="ana")
    assert [r.model for r in extraction_requests(fake_llm)] == ["cheap-model"]
    assert extraction_requests(fake_llm)[0].body.get("temperature") == 0
    assert Fact.objects.get().value == "Lisbon"


def test_thread_keyed_facts_stay_in_their_thread(make_workflow, provider, say, fake_llm):
    fake_llm.responder = extracting_responder
    workflow = make_workflow(facts_graph(provider.pk, key="thread"))
    first = say(workflow["id"], "I live in Lisbon", participant="ana")
    say(workflow["id"], "and?", participant="ana", thread=first["thread"])
    assert facts_message(agent_requests(fake_llm)[-1]) == fact_rules.FACTS_PREFIX + "- city: Lisbon"
    say(workflow["id"], "new thread", participant="ana")
    assert facts_message(agent_requests(fake_llm)[-1]) is None
    assert Fact.objects.get().participant_id is None and Fact.objects.get().key == f"thread:{first['thread']}"


# --- seeing and editing ---------------------------------------------------------------------------
def test_the_owner_sees_and_edits_a_participants_facts(make_workflow, provider, say, fake_llm, api, other_api):
    fake_llm.responder = extracting_responder
    workflow = make_workflow(facts_graph(provider.pk, history={"type": "memory.buffer", "key": "participant"}))
    turn = say(workflow["id"], "I live in Lisbon", participant="ana")
    participant = Participant.objects.get()

    listed = api.get("/api/participants/").json()
    assert listed["count"] == 1 and listed["results"][0] | {"created": None, "last_seen": None} == {
        "id": participant.pk,
        "participant": "ana",
        "anonymous": False,
        "thread_count": 1,
        "created": None,
        "last_seen": None,
    }
    assert api.get(f"/api/participants/?workflow={workflow['id']}").json()["count"] == 1
    assert api.get("/api/participants/?search=nobody").json()["count"] == 0
    detail = api.get(f"/api/participants/{participant.pk}/").json()
    assert [t["id"] for t in detail["threads"]] == [turn["thread"]]
    assert detail["memories"][0]["history"] == "global" and [m["content"] for m in detail["memories"][0]["messages"]] == [
        "I live in Lisbon",
        "echo: I live in Lisbon",
    ]
    assert detail["facts"][0] | {"id": None, "created": None, "updated": None} == {
        "id": None,
        "workflow": workflow["id"],
        "workflow_name": "test workflow",
        "key": "city",
        "value": "Lisbon",
        "source": "extracted",
        "source_message": "I live in Lisbon",
        "run": turn["run"],
        "current": True,
        "superseded": None,
        "superseded_by": None,
        "created": None,
        "updated": None,
    }
    assert detail["extractions"][0]["status"] == "ok"

    url = f"/api/participants/{participant.pk}/facts/"
    added = api.post(url, {"workflow": workflow["id"], "key": "Favourite Colour", "value": "green"}, format="json")
    assert added.status_code == 201 and added.json()["key"] == "favourite_colour" and added.json()["source"] == "owner"
    fact_id = added.json()["id"]
    assert api.patch(f"/api/facts/{fact_id}/", {"value": "blue"}, format="json").json()["value"] == "blue"
    put = api.put(f"/api/facts/{fact_id}/", {"key": "colour", "value": "red"}, format="json")
    assert put.status_code == 200 and (put.json()["key"], put.json()["value"]) == ("colour", "red")
    city = detail["facts"][0]["id"]
    assert api.patch(f"/api/facts/{city}/", {"value": "Coimbra"}, format="json").json()["source"] == "owner"

    # bad input: clear 400s
    assert api.post(url, {"workflow": workflow["id"], "key": "age", "value": 41}, format="json").json() == {
        "value": ["must be a string, not int"]
    }
    assert api.post(url, {"workflow": workflow["id"], "key": ["k"], "value": "v"}, format="json").status_code == 400
    assert api.post(url, {"workflow": workflow["id"], "key": "k", "value": "x" * 1001}, format="json").status_code == 400
    assert api.post(url, {"workflow": workflow["id"], "key": "a\nb", "value": "v"}, format="json").status_code == 400
    assert api.patch(f"/api/facts/{fact_id}/", {}, format="json").status_code == 400
    assert api.put(f"/api/facts/{fact_id}/", {"value": "only"}, format="json").status_code == 400
    assert api.patch(f"/api/facts/{fact_id}/", {"key": "city"}, format="json").json() == {"key": ["there is already a current fact 'city'"]}
    assert api.post(url, {"workflow": 10**9, "key": "k", "value": "v"}, format="json").status_code == 400

    # the model is sent the owner's facts
    say(workflow["id"], "hello again", participant="ana")
    assert facts_message(agent_requests(fake_llm)[-1]) == fact_rules.FACTS_PREFIX + "- city: Coimbra\n- colour: red"

    # another user's participant, facts and fact ids answer 404
    assert other_api.get(f"/api/participants/{participant.pk}/").status_code == 404
    assert other_api.get(url).status_code == 404
    assert other_api.post(url, {"workflow": workflow["id"], "key": "k", "value": "v"}, format="json").status_code == 404
    assert other_api.get(f"/api/facts/{fact_id}/").status_code == 404
    assert other_api.patch(f"/api/facts/{fact_id}/", {"value": "x"}, format="json").status_code == 404
    assert other_api.delete(f"/api/facts/{fact_id}/").status_code == 404
    assert other_api.delete(f"/api/participants/{participant.pk}/").status_code == 404
    assert other_api.get("/api/participants/").json()["count"] == 0

    assert api.delete(f"/api/facts/{fact_id}/").status_code == 204
    assert api.get(f"/api/facts/{fact_id}/").status_code == 404


# --- forgetting ---------------------------------------------------------------------------------
def _everything_stored() -> str:
    """Every text and JSON value of every row of every model, as one string."""
    from django.apps import apps
    from django.db import models

    parts = []
    for model in apps.get_models():
        fields = [f.attname for f in model._meta.concrete_fields if isinstance(f, (models.TextField, models.CharField, models.JSONField))]
        if fields:
            for row in model.objects.values_list(*fields):
                parts.append(json.dumps(row, default=str))
    return "\n".join(parts)


def test_deleting_a_participant_leaves_nothing_of_theirs(make_workflow, provider, say, fake_llm, api, client):
    fake_llm.responder = extracting_responder
    summary = {"type": "memory.summary", "key": "participant", "max_messages": 4, "keep_last": 2}
    workflow = make_workflow(facts_graph(provider.pk, history=summary))
    for text in ("my name is Zyxwanda", "I live in Quuxville", "I work at Frobcorp", "Zyxwanda again"):
        say(workflow["id"], text, participant="zyx-person")
    kept = say(workflow["id"], "I live in Keepton", participant="other-person")
    # a webhook run of the same participant with no thread
    graph = facts_graph(provider.pk)
    graph["nodes"].append(node("hook", "trigger.webhook", 0, 100))
    graph["edges"].append(edge("hook", "agent"))
    hooked = make_workflow(graph, name="hooked")
    assert api.post(f"/api/workflows/{hooked['id']}/publish/").status_code == 201
    url = next(t["webhook_url"] for t in api.get(f"/api/workflows/{hooked['id']}/").json()["triggers"] if t["type"] == "trigger.webhook")
    answer = client.post(
        url.split("testserver", 1)[1] + "?wait=1",
        {"message": "Zyxwanda by webhook", "participant": "zyx-person"},
        content_type="application/json",
    )
    assert answer.status_code == 200

    stored = _everything_stored()
    for word in ("Zyxwanda", "Quuxville", "Frobcorp", "zyx-person"):
        assert word in stored
    participant = Participant.objects.get(external_id="zyx-person")
    assert api.delete(f"/api/participants/{participant.pk}/").status_code == 204
    assert api.get(f"/api/participants/{participant.pk}/").status_code == 404

    stored = _everything_stored()
    for word in ("Zyxwanda", "Quuxville", "Frobcorp", "zyx-person"):
        assert word not in stored, word
    assert not History.objects.filter(key=f"participant:{participant.pk}").exists()
    assert not Run.objects.filter(participant_id=participant.pk).exists()
    # the other participant keeps everything
    assert "Keepton" in stored and Thread.objects.filter(pk=kept["thread"]).exists()
    assert Fact.objects.filter(value="Keepton").exists() and HistoryMessage.objects.filter(content="I live in Keepton").exists()


def test_deleting_a_participant_with_a_running_turn_is_refused(chatbot, say, api):
    turn = say(chatbot["id"], "hello", participant="busy")
    Run.objects.filter(pk=turn["run"]).update(status=Run.Status.RUNNING)
    participant = Participant.objects.get()
    response = api.delete(f"/api/participants/{participant.pk}/")
    assert response.status_code == 409 and "still running" in response.json()["detail"]
    assert Participant.objects.filter(pk=participant.pk).exists()


def test_the_memory_quality_benchmark_replays_participant_memory_over_threads(provider):
    """bench/memory_quality.py's multi-thread configurations build valid workflows (the bench
    replays them through the same chat turns as these tests)."""
    from bench import memory_quality
    from workflows.analysis import graph_issues

    configs = {c.name: c for c in memory_quality.CONFIGS}
    participant_keyed = configs["summary 20/6, participant-keyed, sessions as threads"]
    facts = configs["facts + window 6, sessions as threads"]
    assert participant_keyed.layout == facts.layout == "threads" and participant_keyed.extra["participant"]
    assert configs["summary 20/6, thread-keyed, sessions as threads"].memory.get("key", "thread") == "thread"
    for config in (participant_keyed, facts):
        graph = memory_quality._graph(config, provider.pk)
        assert [i for i in graph_issues(graph=graph, owner=provider.owner) if i["field"] != "model"] == []
    assert {n["type"] for n in memory_quality._graph(facts, provider.pk)["nodes"]} >= {"memory.facts", "memory.window"}
