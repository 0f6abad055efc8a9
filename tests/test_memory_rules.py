"""Memory rules where they meet (docs/memory.md#conversation-memory): a replacement followed by summaries, a
``set_history`` and its reader in one run, limits that are set and not set, the summarizer's own
params, hung summarizers beside a healthy one, tokenizers per model, two messages at once."""

from __future__ import annotations

import threading
import time

import pytest
from django.test import override_settings

from memory.models import HistoryMessage, Summarization, Summary
from memory.strategies import SUMMARY_PREFIX
from memory.summary_prompt import DEFAULT_SUMMARY_MAX_TOKENS
from runs.models import Run
from tests.fakellm import Reply
from tests.graphs import chat_graph, edge, node
from tests.test_memory import SYSTEM, a, agent_requests, converse, is_summary_request, new_user_lines, summary_responder, u

pytestmark = pytest.mark.django_db(transaction=True)


def summary_graph(provider_id, **memory):
    params = {"type": "memory.summary", "max_messages": 4, "keep_last": 2, "llm_source": "external", **memory}
    graph = chat_graph(provider_id, memory=params, summarizer={"model": "cheap-model", "provider": provider_id})
    # a manual trigger on the same thread loads a history through the set_history port
    graph["nodes"].append(node("load", "template", template='[{"role": "user", "content": "loaded {{ payload.n }}"}]'))
    graph["nodes"].append(node("go", "trigger.manual"))
    graph["edges"] += [edge("go", "load"), edge("load", "mem", "output", "set_history")]
    return graph


def replace_via_put(api, thread_id, run):
    response = api.put(f"/api/threads/{thread_id}/memory/mem/", {"messages": [u("loaded 1"), a("ok")]}, format="json")
    assert response.status_code == 200, response.content


def replace_via_import(api, thread_id, run):
    body = {"histories": [{"history": "global", "name": "", "messages": [u("loaded 1"), a("ok")]}]}
    response = api.post(f"/api/threads/{thread_id}/memory-import/", body, format="json")
    assert response.status_code == 200, response.content


def replace_via_delete(api, thread_id, run):
    assert api.delete(f"/api/threads/{thread_id}/memory/mem/").status_code == 204


def replace_via_port(api, thread_id, run):
    from runs import services as runs

    manual = runs.run_create(version=run.version, trigger="manual", input_text="", payload={"n": 1}, thread=run.thread)
    manual.refresh_from_db()
    assert manual.status == "succeeded", manual.error


@pytest.mark.parametrize("replace", [replace_via_put, replace_via_import, replace_via_delete, replace_via_port])
def test_a_summary_made_after_a_replacement_is_saved_and_extended(make_workflow, provider, chat, fake_llm, api, replace):
    fake_llm.responder = summary_responder
    workflow = make_workflow(summary_graph(provider.pk))
    assert workflow["errors"] == []
    first = chat(workflow["id"], "m1")
    replace(api, first["thread"], Run.objects.get(pk=first["run"]))
    converse_on = [chat(workflow["id"], f"m{i}", thread=first["thread"]) for i in range(2, 6)]
    assert all(turn["warnings"] == [] for turn in converse_on)

    calls = fake_llm.requests_for("cheap-model")
    assert len(calls) >= 2
    assert "Summary so far:\n(none yet)" in calls[0].messages[1]["content"]
    # every later request extends the stored summary instead of starting again
    for call in calls[1:]:
        assert "Summary so far:\nSUMMARY(" in call.messages[1]["content"]
        assert len(new_user_lines(call.messages[1]["content"])) <= 2  # only what the summary does not cover yet
    summary = Summary.objects.get(memory_node="mem")
    assert summary.text.startswith("SUMMARY(") and summary.covers_through > 0
    assert Summarization.objects.filter(status="ok").count() == len(calls)
    last_sent = agent_requests(fake_llm)[-1].messages
    assert last_sent[1] == {"role": "system", "content": SUMMARY_PREFIX + summary.text}
    assert len(last_sent) <= 1 + 1 + 2 + 1  # system, summary, the newest 2, the input


def set_history_graph(provider_id, history="global"):
    """chat -> template (renders a list of messages) -> mem.set_history, and chat -> agent reading mem."""
    graph = chat_graph(
        provider_id, memory={"type": "memory.buffer", "history": history, **({"name": "shared"} if history == "named" else {})}
    )
    graph["nodes"].append(
        node(
            "load",
            "template",
            template='[{"role": "user", "content": "loaded for {{ input }}"}, {"role": "assistant", "content": "noted"}]',
        )
    )
    graph["edges"] += [edge("chat", "load"), edge("load", "mem", "output", "set_history")]
    return graph


@pytest.mark.parametrize("history", ["global", "node", "named"])
def test_set_history_fed_in_the_same_run_is_replaced_before_its_reader_runs(make_workflow, provider, chat, fake_llm, api, history):
    workflow = make_workflow(set_history_graph(provider.pk, history))
    assert workflow["errors"] == []
    first = chat(workflow["id"], "q1")
    assert agent_requests(fake_llm)[-1].messages == [SYSTEM, u("loaded for q1"), a("noted"), u("q1")]
    # the reader's own exchange is recorded on top of the replacement
    [memory] = api.get(f"/api/threads/{first['thread']}/memory/").json()
    assert [(m["role"], m["content"]) for m in memory["messages"]] == [
        ("user", "loaded for q1"),
        ("assistant", "noted"),
        ("user", "q1"),
        ("assistant", "echo: q1"),
    ]
    chat(workflow["id"], "q2", thread=first["thread"])
    assert agent_requests(fake_llm)[-1].messages == [SYSTEM, u("loaded for q2"), a("noted"), u("q2")]


def test_a_webhook_loads_a_history_and_asks_a_question_in_one_call(api, make_workflow, provider, fake_llm):
    graph = {
        "nodes": [
            node("hook", "trigger.webhook"),
            node("load", "template", template="{{ payload.history | tojson }}"),
            node("mem", "memory.buffer"),
            node("agent", "llm", model="agent-model", provider=provider.pk, system_prompt="You are a test bot."),
            node("out", "output"),
        ],
        "edges": [
            edge("hook", "load"),
            edge("load", "mem", "output", "set_history"),
            edge("hook", "agent"),
            edge("mem", "agent", "memory", "memory"),
            edge("agent", "out"),
        ],
    }
    workflow = make_workflow(graph)
    assert workflow["errors"] == [] and api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
    url = api.get(f"/api/workflows/{workflow['id']}/").json()["triggers"][0]["webhook_url"].replace("http://testserver", "")
    body = {"message": "What is my order number?", "thread": "customer-9", "history": [u("My order is 4711."), a("Thanks, noted.")]}
    response = api.post(url + "?wait=1", body, format="json")
    assert response.status_code == 200 and response.json()["reply"] == "echo: What is my order number?"
    assert agent_requests(fake_llm)[-1].messages == [SYSTEM, u("My order is 4711."), a("Thanks, noted."), u("What is my order number?")]


def test_a_memory_that_feeds_its_own_reader_is_a_cycle_at_save_time(make_workflow, provider):
    graph = chat_graph(provider.pk, memory={"type": "memory.buffer"})
    graph["nodes"].append(node("back", "template", template="[]"))
    graph["edges"] += [edge("agent", "back"), edge("back", "mem", "output", "set_history")]
    errors = make_workflow(graph)["errors"]
    assert {"node": "mem", "field": "set_history"} in [{"node": e["node"], "field": e["field"]} for e in errors]


def test_a_window_with_only_max_tokens_keeps_as_many_messages_as_fit(make_workflow, provider, chat, fake_llm):
    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.window", "max_tokens": 100_000}))
    converse(chat, workflow["id"], [f"m{i}" for i in range(12)])
    assert len(agent_requests(fake_llm)[-1].messages) == 1 + 22 + 1  # more than the old hidden 20


def test_a_window_with_both_limits_holds_both(make_workflow, provider, chat, fake_llm):
    from memory.tokens import tokenizer_for

    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.window", "max_tokens": 100_000, "max_messages": 3}))
    converse(chat, workflow["id"], [f"m{i}" for i in range(4)])
    assert agent_requests(fake_llm)[-1].messages == [SYSTEM, a("echo: m1"), u("m2"), a("echo: m2"), u("m3")]

    # now the token limit is the tighter one: two messages' worth
    tokenizer = tokenizer_for("agent-model")
    budget = tokenizer.count_message("assistant", "echo: m2") + tokenizer.count_message("user", "m3")
    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.window", "max_tokens": budget, "max_messages": 10}))
    converse(chat, workflow["id"], [f"m{i}" for i in range(5)])
    assert agent_requests(fake_llm)[-1].messages == [SYSTEM, u("m3"), a("echo: m3"), u("m4")]


def test_a_window_with_no_limit_set_keeps_twenty(make_workflow, provider, chat, fake_llm):
    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.window"}))
    converse(chat, workflow["id"], [f"m{i}" for i in range(12)])
    assert len(agent_requests(fake_llm)[-1].messages) == 1 + 20 + 1


def test_the_external_summarizer_is_called_with_its_own_params(make_workflow, provider, chat, fake_llm):
    fake_llm.responder = summary_responder
    graph = chat_graph(
        provider.pk,
        memory={"type": "memory.summary", "max_messages": 4, "keep_last": 2, "llm_source": "external"},
        summarizer={"model": "cheap-model", "provider": provider.pk, "temperature": 0.9},
    )
    workflow = make_workflow(graph)
    converse(chat, workflow["id"], ["m1", "m2", "m3"])
    [call] = fake_llm.requests_for("cheap-model")
    assert call.body["temperature"] == 0.9


def test_from_parent_summarizes_with_the_consumers_model_at_a_low_temperature(make_workflow, provider, chat, fake_llm):
    fake_llm.responder = summary_responder
    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.summary", "max_messages": 4, "keep_last": 2}))
    converse(chat, workflow["id"], ["m1", "m2", "m3"])
    [call] = [r for r in agent_requests(fake_llm) if is_summary_request(r)]
    # the default prompt asks for a sentence or two: the reply is bounded to match
    assert call.body["temperature"] == 0.2 and call.body["max_tokens"] == DEFAULT_SUMMARY_MAX_TOKENS


# --- the summarization bound -----------------------------------------------------------------------
HUNG = 6.0  # seconds a hung summarizer stalls before its first byte: well past the bound below


def hung_or_healthy(request):
    if request.model == "hung-model":
        return Reply(text="too late", delay=HUNG)
    if request.model == "cheap-model":
        return Reply(text=f"SUMMARY({len(new_user_lines(request.messages[-1]['content']))} user msgs)")
    return Reply(text=f"echo: {request.last_user}")


def summarizing(make_workflow, provider, summarizer_model):
    graph = chat_graph(
        provider.pk,
        memory={"type": "memory.summary", "max_messages": 2, "keep_last": 0, "llm_source": "external"},
        summarizer={"model": summarizer_model, "provider": provider.pk},
    )
    return make_workflow(graph)


@override_settings(SKEIN_SUMMARY_TIMEOUT_S=1.5)
def test_a_summarization_past_its_bound_sends_nothing_more_to_the_provider(make_workflow, provider, chat, fake_llm):
    fake_llm.responder = hung_or_healthy
    workflow = summarizing(make_workflow, provider, "hung-model")
    first = chat(workflow["id"], "m1")
    started = time.monotonic()
    second = chat(workflow["id"], "m2", thread=first["thread"])
    assert second["status"] == "succeeded" and "did not answer within 1.5s" in second["warnings"][0]["message"]
    # A retry of the abandoned call would come after the attempt's timeout plus a backoff (0.5 s,
    # then 1 s): wait out both, then check that the provider saw one request, inside the bound.
    deadline = started + 1.5
    while time.monotonic() < deadline + 3.0:
        time.sleep(0.1)
    [only] = fake_llm.requests_for("hung-model")
    assert only.received <= deadline


@override_settings(SKEIN_SUMMARY_TIMEOUT_S=2.5)
def test_ten_hung_summarizers_never_delay_a_healthy_one(make_workflow, provider, chat, fake_llm, user):
    fake_llm.responder = hung_or_healthy
    hung = [summarizing(make_workflow, provider, "hung-model") for _ in range(10)]
    healthy = summarizing(make_workflow, provider, "cheap-model")
    threads = {w["id"]: chat(w["id"], "m1")["thread"] for w in [*hung, healthy]}

    results: dict[int, dict] = {}

    def second_turn(workflow_id: int) -> None:
        from django.db import connections
        from rest_framework.test import APIClient

        client = APIClient()
        client.force_authenticate(user)
        try:
            results[workflow_id] = client.post(
                f"/api/workflows/{workflow_id}/chat/", {"message": "m2", "thread": threads[workflow_id]}, format="json"
            ).json()
        finally:
            connections.close_all()

    workers = [threading.Thread(target=second_turn, args=(w["id"],)) for w in hung]
    for worker in workers:
        worker.start()
    # every hung summarizer is stalled at the provider before the healthy workflow summarizes
    deadline = time.monotonic() + 30
    while len(fake_llm.requests_for("hung-model")) < 10 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(fake_llm.requests_for("hung-model")) == 10
    second_turn(healthy["id"])
    for worker in workers:
        worker.join(timeout=60)

    assert results[healthy["id"]]["warnings"] == [] and results[healthy["id"]]["reply"] == "echo: m2"
    assert Summarization.objects.filter(memory_node="mem", status="ok").count() == 1
    for workflow in hung:
        turn = results[workflow["id"]]
        assert turn["status"] == "succeeded" and "did not answer within 2.5s" in turn["warnings"][0]["message"]
    assert len(fake_llm.requests_for("hung-model")) == 10  # and not one retry


# --- token counts by the consuming model's tokenizer ---------------------------------------------
@pytest.mark.parametrize(
    "model, kind, expected",
    [
        ("gpt-4o-mini", None, "o200k"),
        ("gpt-4o-mini", "openai", "o200k"),
        ("gpt-4.1-mini", "openai_compatible", "o200k"),
        ("openai/gpt-4", None, "cl100k"),
        ("anthropic/claude-haiku-4-5", None, "anthropic"),
        ("llama3.2", "ollama", "cl100k"),  # no tokenizer ships for it: litellm's default
        ("some-model", "openai_compatible", "cl100k"),
    ],
)
def test_each_model_counts_with_its_own_tokenizer(model, kind, expected):
    from memory.tokens import tokenizer_for

    assert tokenizer_for(model, kind).name == expected


def test_the_local_model_counts_with_its_gguf_vocabulary():
    from llama_cpp import Llama

    from memory.tokens import tokenizer_for
    from providers.local_model import model_path

    tokenizer = tokenizer_for("smollm2", "local")
    assert tokenizer.name == f"gguf:{model_path().stem}"
    text = "Grüße aus Lisboa — 1234567 tokens? ¿Sí!"
    vocab = Llama(model_path=str(model_path()), vocab_only=True, verbose=False)
    try:
        assert tokenizer.count_text(text) == len(vocab.tokenize(text.encode(), add_bos=False, special=False))
    finally:
        vocab.close()


def test_two_models_reading_one_history_each_count_it_once(make_workflow, provider, chat, fake_llm, monkeypatch):
    """A named history read by a cl100k model and an o200k one: each message gets both counts,
    and a turn counts only the new messages, however long the history grows."""
    from memory import runtime, services

    fake_llm.responder = lambda r: Reply(text=f"{r.model} says {r.last_user}")
    named = {"history": "named", "name": "team", "max_tokens": 100_000}
    graph = {
        "nodes": [
            node("chat", "trigger.chat"),
            node("first", "llm", model="agent-model", provider=provider.pk, system_prompt="first"),
            node("second", "llm", model="gpt-4o-mini", provider=provider.pk, system_prompt="second"),
            node("out", "output"),
            node("mem_a", "memory.window", **named),
            node("mem_b", "memory.window", **named),
        ],
        "edges": [
            edge("chat", "first"),
            edge("first", "second"),
            edge("second", "out"),
            edge("mem_a", "first", "memory", "memory"),
            edge("mem_b", "second", "memory", "memory"),
        ],
    }
    workflow = make_workflow(graph)
    counted_per_turn = []
    original = services.token_counts_store

    def spy(*, rows):
        counted_per_turn[-1] += len(rows)
        return original(rows=rows)

    monkeypatch.setattr(runtime.services, "token_counts_store", spy)
    thread = None
    for i in range(6):
        counted_per_turn.append(0)
        thread = chat(workflow["id"], f"m{i}", thread=thread)["thread"]
    counts = list(HistoryMessage.objects.filter(history__name="team").values_list("token_counts", flat=True))
    assert len(counts) == 24 and all(set(c) == {"cl100k", "o200k"} for c in counts)
    assert len(set(counted_per_turn[1:])) == 1 and counted_per_turn[-1] <= 2  # flat: only the turn's new messages


# --- two messages on one thread at once (embedded mode) --------------------------------------------
@pytest.mark.parametrize("entry", ["chat", "webhook"])
def test_two_messages_on_one_thread_each_wait_for_their_own_reply(make_workflow, provider, chat, fake_llm, user, api, entry):
    from django.db import connections
    from rest_framework.test import APIClient

    release = threading.Event()
    queued = threading.Event()

    def responder(request):
        if request.last_user == "first":  # answer once the second message is queued behind this turn
            queued.set()
            try:
                deadline = time.monotonic() + 30
                while not Run.objects.filter(input="second").exists() and time.monotonic() < deadline:
                    time.sleep(0.02)
            finally:
                connections.close_all()
        if request.last_user == "second":
            release.wait(30)  # the second turn's model answers only once the first reply arrived
        return Reply(text=f"echo: {request.last_user}")

    graph = chat_graph(provider.pk, memory={"type": "memory.buffer"})
    graph["nodes"].append(node("hook", "trigger.webhook"))
    graph["edges"].append(edge("hook", "agent"))
    workflow = make_workflow(graph)
    if entry == "chat":
        thread = chat(workflow["id"], "hello")["thread"]
        url, body = f"/api/workflows/{workflow['id']}/chat/", {"thread": thread}
    else:
        assert api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
        hook = [t for t in api.get(f"/api/workflows/{workflow['id']}/").json()["triggers"] if t["type"] == "trigger.webhook"][0]
        url, body = hook["webhook_url"].replace("http://testserver", "") + "?wait=1", {"thread": "customer-1"}
        api.post(url, {**body, "message": "hello"}, format="json")
    fake_llm.responder = responder
    replies: dict[str, dict] = {}

    def send(message: str) -> None:
        client = APIClient()
        client.force_authenticate(user)
        try:
            replies[message] = client.post(url, {**body, "message": message}, format="json").json()
        finally:
            connections.close_all()

    first = threading.Thread(target=send, args=("first",))
    first.start()
    assert queued.wait(30)
    second = threading.Thread(target=send, args=("second",))
    second.start()
    first.join(timeout=30)
    # the first request answered with its own reply while the second turn still waits on the model
    assert not first.is_alive() and replies["first"]["reply"] == "echo: first"
    assert "second" not in replies
    release.set()
    second.join(timeout=30)
    assert replies["second"]["status"] == "succeeded" and replies["second"]["reply"] == "echo: second"
    assert replies["second"]["run"] != replies["first"]["run"]
    transcript = [m.content for m in Run.objects.get(pk=replies["second"]["run"]).thread.messages.order_by("seq")]
    assert transcript == ["hello", "echo: hello", "first", "echo: first", "second", "echo: second"]


# --- the inspector: editing a summary, export and import with summaries ----------------------------
def summarized_thread(make_workflow, provider, chat, fake_llm):
    fake_llm.responder = summary_responder
    workflow = make_workflow(summary_graph(provider.pk))
    turns = converse(chat, workflow["id"], ["m1", "m2", "m3"])
    return workflow, turns[-1]["thread"]


def test_an_edited_summary_is_what_the_model_sees_next_and_stays_covering(make_workflow, provider, chat, fake_llm, api):
    workflow, thread = summarized_thread(make_workflow, provider, chat, fake_llm)
    url = f"/api/threads/{thread}/memory/mem/"
    before = api.get(url).json()
    assert before["summary"].startswith("SUMMARY(") and before["summarizes"]
    edited = api.patch(url, {"summary": "The user is Alice, who lives in Lisbon with a cat named Pixel."}, format="json")
    assert edited.status_code == 200, edited.content
    body = edited.json()
    assert (
        body["summary"] == "The user is Alice, who lives in Lisbon with a cat named Pixel."
        and body["summary_through"] == before["summary_through"]
    )
    summary_message = body["messages"][0]
    assert summary_message["content"] == SUMMARY_PREFIX + "The user is Alice, who lives in Lisbon with a cat named Pixel."
    assert summary_message["token_count"] != before["messages"][0]["token_count"]  # recounted
    chat(workflow["id"], "m4", thread=thread)  # a summarization is due: it extends the edited text
    assert (
        "Summary so far:\nThe user is Alice, who lives in Lisbon with a cat named Pixel."
        in (fake_llm.requests_for("cheap-model")[-1].messages[1]["content"])
    )


def test_summary_edits_refuse_bad_input_and_change_nothing(make_workflow, provider, chat, fake_llm, api):
    workflow, thread = summarized_thread(make_workflow, provider, chat, fake_llm)
    url = f"/api/threads/{thread}/memory/mem/"
    before = api.get(url).json()
    for body in ({"summary": 42}, {"summary": ["a"]}, {"summary": None}, {}):
        response = api.patch(url, body, format="json")
        assert response.status_code == 400 and "summary" in response.json(), (body, response.content)
    assert api.patch(f"/api/threads/{thread}/memory/nope/", {"summary": "x"}, format="json").status_code == 404
    buffer = make_workflow(chat_graph(provider.pk, memory={"type": "memory.buffer"}))
    buffer_thread = chat(buffer["id"], "hi")["thread"]
    refused = api.patch(f"/api/threads/{buffer_thread}/memory/mem/", {"summary": "x"}, format="json")
    assert refused.status_code == 400 and "keeps no summary" in str(refused.json()["summary"])
    assert api.get(url).json() == before


def test_export_and_import_carry_summaries(make_workflow, provider, chat, fake_llm, api):
    workflow, thread = summarized_thread(make_workflow, provider, chat, fake_llm)
    exported = api.get(f"/api/threads/{thread}/memory-export/").json()
    [history] = exported["histories"]
    [summary] = history["summaries"]
    assert summary["node"] == "mem" and summary["text"].startswith("SUMMARY(")
    assert summary["through_seq"] in [m["seq"] for m in history["messages"]]
    before = api.get(f"/api/threads/{thread}/memory/mem/").json()

    assert api.delete(f"/api/threads/{thread}/memory/mem/").status_code == 204
    imported = api.post(f"/api/threads/{thread}/memory-import/", exported, format="json")
    assert imported.status_code == 200, imported.content
    after = api.get(f"/api/threads/{thread}/memory/mem/").json()
    assert after["summary"] == before["summary"]
    assert [m["content"] for m in after["messages"]] == [m["content"] for m in before["messages"]]
    # the imported summary is extended by the next summarization like any other
    converse_more = [chat(workflow["id"], f"n{i}", thread=thread) for i in range(3)]
    assert all(t["warnings"] == [] for t in converse_more)
    assert f"Summary so far:\n{before['summary']}" in fake_llm.requests_for("cheap-model")[-1].messages[1]["content"]


def test_an_import_whose_summary_covers_messages_it_lacks_is_refused_whole(make_workflow, provider, chat, fake_llm, api):
    workflow, thread = summarized_thread(make_workflow, provider, chat, fake_llm)
    exported = api.get(f"/api/threads/{thread}/memory-export/").json()
    before = api.get(f"/api/threads/{thread}/memory/").json()
    bad = {"histories": [dict(exported["histories"][0], summaries=[{"node": "mem", "text": "x", "through_seq": 999}])]}
    response = api.post(f"/api/threads/{thread}/memory-import/", bad, format="json")
    assert response.status_code == 400 and "999" in str(response.json())
    stranger = {"histories": [dict(exported["histories"][0], summaries=[{"node": "ghost", "text": "x", "through_seq": 0}])]}
    response = api.post(f"/api/threads/{thread}/memory-import/", stranger, format="json")
    assert response.status_code == 400 and "ghost" in str(response.json())
    twice = {"histories": [dict(exported["histories"][0], messages=[{"seq": 1, **u("a")}, {"seq": 1, **a("b")}], summaries=[])]}
    assert api.post(f"/api/threads/{thread}/memory-import/", twice, format="json").status_code == 400
    not_text = {"histories": [dict(exported["histories"][0], summaries=[{"node": "mem", "text": 7, "through_seq": 0}])]}
    assert api.post(f"/api/threads/{thread}/memory-import/", not_text, format="json").status_code == 400
    assert api.get(f"/api/threads/{thread}/memory/").json() == before
