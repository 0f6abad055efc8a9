"""Conversation memory (docs/memory.md#conversation-memory), asserting exactly what the fake model received."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from memory.models import HistoryMessage, Summarization
from memory.strategies import SUMMARY_PREFIX
from memory.summary_prompt import DEFAULT_SUMMARY_PROMPT, NEW_FROM_USER
from runs.models import Message
from tests.fakellm import Reply
from tests.graphs import chat_graph, edge, node
from workflows import services as workflow_services

pytestmark = pytest.mark.django_db(transaction=True)

SYSTEM = {"role": "system", "content": "You are a test bot."}


def u(text):
    return {"role": "user", "content": text}


def a(text):
    return {"role": "assistant", "content": text}


def converse(chat, workflow_id, messages):
    thread = None
    turns = []
    for message in messages:
        turn = chat(workflow_id, message, thread=thread)
        thread = turn["thread"]
        turns.append(turn)
    return turns


def agent_requests(fake_llm):
    return fake_llm.requests_for("agent-model")


def test_buffer_memory_sends_the_whole_conversation(make_workflow, provider, chat, fake_llm):
    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.buffer"}))
    converse(chat, workflow["id"], ["one", "two", "three"])
    assert agent_requests(fake_llm)[-1].messages == [SYSTEM, u("one"), a("echo: one"), u("two"), a("echo: two"), u("three")]


def test_window_keeps_the_newest_k_messages(make_workflow, provider, chat, fake_llm, api):
    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.window", "max_messages": 3}))
    turns = converse(chat, workflow["id"], ["one", "two", "three", "four"])
    assert agent_requests(fake_llm)[-1].messages == [SYSTEM, a("echo: two"), u("three"), a("echo: three"), u("four")]
    # the transcript is never trimmed
    assert len(api.get(f"/api/threads/{turns[-1]['thread']}/messages/").json()) == 8


def test_window_by_tokens_drops_the_oldest_until_it_fits(make_workflow, provider, chat, fake_llm):
    from memory.tokens import count_message

    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.window", "max_messages": None, "max_tokens": 20}))
    converse(chat, workflow["id"], ["alpha beta gamma", "delta", "epsilon zeta"])
    sent = agent_requests(fake_llm)[-1].messages[1:-1]
    assert sum(count_message(m["role"], m["content"]) for m in sent) <= 20
    history = [u("alpha beta gamma"), a("echo: alpha beta gamma"), u("delta"), a("echo: delta")]
    assert sent == history[len(history) - len(sent) :] and 0 < len(sent) < len(history)


def summarizing_workflow(make_workflow, provider, **memory):
    params = {"type": "memory.summary", "max_messages": 6, "keep_last": 2, "llm_source": "external", **memory}
    summarizer = {"model": "cheap-model", "provider": provider.pk} if params["llm_source"] == "external" else None
    return make_workflow(chat_graph(provider.pk, memory=params, summarizer=summarizer))


def is_summary_request(request) -> bool:
    return bool(request.messages) and request.messages[0]["content"] == DEFAULT_SUMMARY_PROMPT


def new_user_lines(content: str) -> list[str]:
    """The participant's messages in a default summary request (one ``- `` line each)."""
    return [line[2:] for line in content.partition(NEW_FROM_USER)[2].splitlines() if line.startswith("- ")]


def summary_responder(request):
    if request.model == "cheap-model" or is_summary_request(request):
        covered = len(new_user_lines(request.messages[-1]["content"]))
        return Reply(text=f"SUMMARY({covered} user msgs)")
    return Reply(text=f"echo: {request.last_user}")


def test_summary_memory_summarizes_at_the_threshold_and_keeps_the_newest(make_workflow, provider, chat, fake_llm, api):
    fake_llm.responder = summary_responder
    workflow = summarizing_workflow(make_workflow, provider)
    turns = converse(chat, workflow["id"], [f"m{i}" for i in range(1, 6)])

    summarizer_calls = fake_llm.requests_for("cheap-model")
    assert len(summarizer_calls) == 1  # at turn 4 the history reached 6 messages
    first = summarizer_calls[0]
    assert first.messages[0]["content"] == DEFAULT_SUMMARY_PROMPT
    assert "Summary so far:\n(none yet)" in first.messages[1]["content"]
    # the participant's own messages only (user-only grounding), the newest 2 messages kept out
    assert new_user_lines(first.messages[1]["content"]) == ["m1", "m2"] and "echo: m2" not in first.messages[1]["content"]

    # turn 4: summary of m1..m2 (4 messages) + the newest 2 + the input
    assert agent_requests(fake_llm)[3].messages == [
        SYSTEM,
        {"role": "system", "content": SUMMARY_PREFIX + "SUMMARY(2 user msgs)"},
        u("m3"),
        a("echo: m3"),
        u("m4"),
    ]
    # turn 5: the summary is reused, not recomputed; the kept history grows
    assert agent_requests(fake_llm)[4].messages == [
        SYSTEM,
        {"role": "system", "content": SUMMARY_PREFIX + "SUMMARY(2 user msgs)"},
        u("m3"),
        a("echo: m3"),
        u("m4"),
        a("echo: m4"),
        u("m5"),
    ]
    record = Summarization.objects.get()
    assert (record.status, record.model, record.message_count, record.from_seq, record.through_seq) == ("ok", "cheap-model", 4, 1, 4)
    assert record.prompt_tokens > 0
    [shown] = api.get(f"/api/runs/{turns[3]['run']}/").json()["summarizations"]
    assert (shown["node"], shown["status"], shown["from_seq"], shown["through_seq"]) == ("mem", "ok", 1, 4)

    memory = api.get(f"/api/threads/{turns[-1]['thread']}/memory/").json()
    assert memory[0]["summary"] == "SUMMARY(2 user msgs)" and memory[0]["name"] == "mem"
    assert [m["content"] for m in memory[0]["messages"][1:]] == ["m3", "echo: m3", "m4", "echo: m4", "m5", "echo: m5"]
    assert len(api.get(f"/api/threads/{turns[-1]['thread']}/messages/").json()) == 10


def test_summary_is_extended_with_the_previous_summary(make_workflow, provider, chat, fake_llm):
    fake_llm.responder = summary_responder
    workflow = summarizing_workflow(make_workflow, provider)
    converse(chat, workflow["id"], [f"m{i}" for i in range(1, 7)])
    calls = fake_llm.requests_for("cheap-model")
    assert len(calls) == 2  # at turns 4 and 6, each time the history reached 6 messages
    second = calls[1].messages[1]["content"]
    assert "Summary so far:\nSUMMARY(2 user msgs)" in second
    # the second summarization folds in only what the first did not cover, and keeps the newest 2
    assert new_user_lines(second) == ["m3", "m4"]
    assert agent_requests(fake_llm)[-1].messages == [
        SYSTEM,
        {"role": "system", "content": SUMMARY_PREFIX + "SUMMARY(2 user msgs)"},
        u("m5"),
        a("echo: m5"),
        u("m6"),
    ]


def test_from_parent_summarizes_with_the_agents_model(make_workflow, provider, chat, fake_llm):
    fake_llm.responder = summary_responder
    workflow = summarizing_workflow(make_workflow, provider, llm_source="from_parent")
    converse(chat, workflow["id"], [f"m{i}" for i in range(1, 5)])
    summary_calls = [r for r in agent_requests(fake_llm) if is_summary_request(r)]
    assert len(summary_calls) == 1 and not fake_llm.requests_for("cheap-model")


@override_settings(SKEIN_SUMMARY_TIMEOUT_S=1)
def test_a_hanging_summarizer_falls_back_to_the_whole_history_with_a_warning(make_workflow, provider, chat, fake_llm, api):
    def responder(request):
        if request.model == "cheap-model":
            return Reply(text="late summary", delay=4)
        return Reply(text=f"echo: {request.last_user}")

    fake_llm.responder = responder
    workflow = summarizing_workflow(make_workflow, provider)
    turns = converse(chat, workflow["id"], ["m1", "m2", "m3", "m4"])
    last = turns[-1]
    assert last["status"] == "succeeded" and last["reply"] == "echo: m4"
    assert len(last["warnings"]) == 1 and last["warnings"][0]["node"] == "mem"
    assert "summarization failed" in last["warnings"][0]["message"]
    assert agent_requests(fake_llm)[-1].messages == [
        SYSTEM,
        u("m1"),
        a("echo: m1"),
        u("m2"),
        a("echo: m2"),
        u("m3"),
        a("echo: m3"),
        u("m4"),
    ]
    assert api.get(f"/api/runs/{last['run']}/").json()["warnings"] == last["warnings"]
    assert Summarization.objects.get().status == "failed"

    # the next turn tries again (and this time the summarizer answers)
    fake_llm.responder = summary_responder
    turn = chat(workflow["id"], "m5", thread=last["thread"])
    assert turn["warnings"] == []
    assert agent_requests(fake_llm)[-1].messages[1]["content"].startswith(SUMMARY_PREFIX)
    assert Summarization.objects.filter(status="ok").count() == 1


def test_a_failing_summarizer_warns_and_the_turn_answers(make_workflow, provider, chat, fake_llm):
    fake_llm.responder = lambda r: Reply(status=400, text="bad summarizer") if r.model == "cheap-model" else Reply(text="ok")
    workflow = summarizing_workflow(make_workflow, provider)
    turns = converse(chat, workflow["id"], ["m1", "m2", "m3", "m4"])
    assert turns[-1]["reply"] == "ok" and "bad summarizer" in turns[-1]["warnings"][0]["message"]


def test_summary_by_tokens(make_workflow, provider, chat, fake_llm):
    fake_llm.responder = summary_responder
    workflow = summarizing_workflow(make_workflow, provider, max_messages=None, max_tokens=40, keep_last=2)
    converse(chat, workflow["id"], ["a long message " * 3, "another fairly long message", "third"])
    assert len(fake_llm.requests_for("cheap-model")) >= 1


def test_seed_messages_come_first(make_workflow, provider, chat, fake_llm):
    seeds = [u("What is 2+2?"), a("4")]
    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.buffer", "seed_messages": seeds}))
    converse(chat, workflow["id"], ["one", "two"])
    assert agent_requests(fake_llm)[-1].messages == [SYSTEM, *seeds, u("one"), a("echo: one"), u("two")]


def test_run_keyed_memory_lives_for_one_run(make_workflow, provider, chat, fake_llm):
    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.buffer", "key": "run"}))
    converse(chat, workflow["id"], ["one", "two"])
    assert agent_requests(fake_llm)[-1].messages == [SYSTEM, u("two")]


def two_agents(provider_id, memory_a, memory_b):
    nodes = [
        node("chat", "trigger.chat"),
        node("first", "llm", model="first-model", provider=provider_id, system_prompt="first"),
        node("second", "llm", model="second-model", provider=provider_id, system_prompt="second"),
        node("out", "output"),
        node("mem_a", memory_a.pop("type"), **memory_a),
        node("mem_b", memory_b.pop("type"), **memory_b),
    ]
    edges = [
        edge("chat", "first"),
        edge("first", "second"),
        edge("second", "out"),
        edge("mem_a", "first", "memory", "memory"),
        edge("mem_b", "second", "memory", "memory"),
    ]
    return {"nodes": nodes, "edges": edges}


def test_node_history_holds_the_nodes_own_inputs_and_outputs(make_workflow, provider, chat, fake_llm):
    fake_llm.responder = lambda r: Reply(text=f"{r.model}({r.last_user})")
    workflow = make_workflow(
        two_agents(provider.pk, {"type": "memory.buffer", "history": "node"}, {"type": "memory.buffer", "history": "node"})
    )
    assert workflow["errors"] == []
    converse(chat, workflow["id"], ["hi", "again"])
    second_calls = fake_llm.requests_for("second-model")
    # the second node saw its own previous input (the first node's output) and its own output
    assert second_calls[-1].messages == [
        {"role": "system", "content": "second"},
        u("first-model(hi)"),
        a("second-model(first-model(hi))"),
        u("first-model(again)"),
    ]
    assert fake_llm.requests_for("first-model")[-1].messages == [
        {"role": "system", "content": "first"},
        u("hi"),
        a("first-model(hi)"),
        u("again"),
    ]


def test_named_history_is_shared_and_updated_immediately(make_workflow, provider, chat, fake_llm):
    fake_llm.responder = lambda r: Reply(text=f"{r.model}({r.last_user})")
    named = {"type": "memory.buffer", "history": "named", "name": "team"}
    workflow = make_workflow(two_agents(provider.pk, dict(named), dict(named)))
    converse(chat, workflow["id"], ["hi"])
    # within the same turn, the second node already sees what the first added
    assert fake_llm.requests_for("second-model")[0].messages == [
        {"role": "system", "content": "second"},
        u("hi"),
        a("first-model(hi)"),
        u("first-model(hi)"),
    ]
    assert HistoryMessage.objects.filter(history__kind="named", history__name="team").count() == 4


def test_router_node_history_records_the_route_it_chose(make_workflow, provider, chat, fake_llm):
    def respond(request):
        return Reply(text="sales" if request.model == "router-model" else "answer")

    fake_llm.responder = respond
    graph = {
        "nodes": [
            node("chat", "trigger.chat"),
            node(
                "router",
                "router.llm",
                model="router-model",
                provider=provider.pk,
                routes=[{"name": "sales"}, {"name": "support"}],
                default_route="support",
            ),
            node("rmem", "memory.buffer", history="node"),
            node("sales", "template", template="S"),
            node("support", "template", template="T"),
            node("out", "output"),
        ],
        "edges": [
            edge("chat", "router"),
            edge("router", "sales", "sales"),
            edge("router", "support", "support"),
            edge("sales", "out"),
            edge("support", "out"),
            edge("rmem", "router", "memory", "memory"),
        ],
    }
    workflow = make_workflow(graph)
    converse(chat, workflow["id"], ["buy", "more"])
    last = fake_llm.requests_for("router-model")[-1].messages
    assert last[1:] == [u("buy"), a("sales"), u("more")]


def test_set_history_replaces_and_resets_the_summary(make_workflow, provider, chat, fake_llm):
    fake_llm.responder = summary_responder
    graph = chat_graph(provider.pk, memory={"type": "memory.summary", "max_messages": 4, "keep_last": 2, "llm_source": "from_parent"})
    graph["nodes"].append(node("load", "template", template='[{"role": "user", "content": "loaded {{ payload.n }}"}]'))
    graph["nodes"].append(node("go", "trigger.manual"))
    graph["edges"] += [edge("go", "load"), edge("load", "mem", "output", "set_history")]
    workflow = make_workflow(graph)
    assert workflow["errors"] == []
    turns = converse(chat, workflow["id"], ["m1", "m2", "m3"])
    assert any(is_summary_request(r) for r in agent_requests(fake_llm))

    from runs import services as runs
    from runs.models import Run

    run = Run.objects.get(pk=turns[-1]["run"])
    manual = runs.run_create(version=run.version, trigger="manual", input_text="", payload={"n": 7}, thread=run.thread)
    manual.refresh_from_db()
    assert manual.status == "succeeded", manual.error
    chat(workflow["id"], "after", thread=turns[-1]["thread"])
    assert agent_requests(fake_llm)[-1].messages == [SYSTEM, u("loaded 7"), u("after")]


def test_emit_messages_sends_the_context_downstream(make_workflow, provider, chat):
    graph = {
        "nodes": [
            node("chat", "trigger.chat"),
            node("mem", "memory.window", max_messages=2, emit_messages=True),
            node("t", "template", template="{{ messages|length }} earlier; last: {{ messages[-1].content if messages else '-' }}"),
            node("out", "output"),
        ],
        "edges": [edge("chat", "t"), edge("mem", "t", "messages", "input"), edge("t", "out")],
    }
    workflow = make_workflow(graph)
    assert workflow["errors"] == []
    turns = converse(chat, workflow["id"], ["one", "two"])
    assert turns[0]["reply"].startswith("0 earlier")
    assert "2 earlier; last: " in turns[1]["reply"]


def test_memory_api_get_put_delete_export_import(make_workflow, provider, chat, fake_llm, api):
    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.buffer"}))
    thread = converse(chat, workflow["id"], ["one", "two"])[-1]["thread"]
    url = f"/api/threads/{thread}/memory/"
    [memory] = api.get(url).json()
    assert memory["history"] == "global" and memory["token_count"] == sum(m["token_count"] for m in memory["messages"])
    assert [m["content"] for m in memory["messages"]] == ["one", "echo: one", "two", "echo: two"]

    replaced = api.put(url + "mem/", {"messages": [u("replaced"), a("ok")]}, format="json")
    assert replaced.status_code == 200 and [m["content"] for m in replaced.json()["messages"]] == ["replaced", "ok"]
    chat(workflow["id"], "three", thread=thread)
    assert agent_requests(fake_llm)[-1].messages == [SYSTEM, u("replaced"), a("ok"), u("three")]
    # replacing memory never touches the transcript
    assert len(api.get(f"/api/threads/{thread}/messages/").json()) == 6

    exported = api.get(f"/api/threads/{thread}/memory-export/").json()
    assert [{"role": m["role"], "content": m["content"]} for m in exported["histories"][0]["messages"][:2]] == [u("replaced"), a("ok")]

    assert api.delete(url + "mem/").status_code == 204
    assert api.get(url).json()[0]["messages"] == []
    imported = api.post(f"/api/threads/{thread}/memory-import/", exported, format="json")
    assert imported.status_code == 200 and imported.json()[0]["messages"][0]["content"] == "replaced"

    assert api.put(url + "nope/", {"messages": []}, format="json").status_code == 404
    assert api.put(url + "mem/", {"messages": [{"role": "wizard", "content": "x"}]}, format="json").status_code == 400
    assert api.put(url + "mem/", {"messages": "x"}, format="json").status_code == 400


def test_runs_without_a_thread_bind_thread_memory_to_the_run(make_workflow, provider, fake_llm):
    from runs import services as runs
    from workflows.models import Workflow

    graph = chat_graph(provider.pk, memory={"type": "memory.buffer", "history": "node"})
    graph["nodes"].append(node("go", "trigger.manual"))
    graph["edges"].append(edge("go", "agent"))
    workflow = Workflow.objects.get(pk=make_workflow(graph)["id"])
    version = workflow_services.draft_snapshot(workflow=workflow)
    first = runs.run_create(version=version, trigger="manual", input_text="one")
    second = runs.run_create(version=version, trigger="manual", input_text="two")
    assert agent_requests(fake_llm)[-1].messages == [SYSTEM, u("two")]
    keys = set(HistoryMessage.objects.values_list("history__key", flat=True))
    assert keys == {f"run:{first.pk}", f"run:{second.pk}"}


def test_memory_node_ids_are_workflow_scoped(make_workflow, provider, chat, fake_llm):
    one = make_workflow(chat_graph(provider.pk, memory={"type": "memory.buffer", "history": "named", "name": "x"}))
    two = make_workflow(chat_graph(provider.pk, memory={"type": "memory.buffer", "history": "named", "name": "x"}))
    chat(one["id"], "secret of one")
    chat(two["id"], "hello")
    assert "secret" not in json.dumps(agent_requests(fake_llm)[-1].messages)


def test_transcript_keeps_everything_whatever_memory_does(make_workflow, provider, chat, fake_llm):
    fake_llm.responder = summary_responder
    workflow = summarizing_workflow(make_workflow, provider, max_messages=4, keep_last=1)
    turns = converse(chat, workflow["id"], [f"m{i}" for i in range(10)])
    assert Message.objects.filter(thread_id=turns[-1]["thread"]).count() == 20
