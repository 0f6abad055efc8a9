"""The trace shows exactly what each model was sent (docs/runs.md#the-trace): every step that called a model
carries its ``messages``, and each summarization its request, as the provider received them."""

from __future__ import annotations

import pytest

from tests.graphs import chat_graph
from tests.test_memory import converse, summarizing_workflow, summary_responder

pytestmark = pytest.mark.django_db(transaction=True)


def test_each_model_step_records_exactly_what_the_provider_received(make_workflow, provider, chat, fake_llm, api):
    fake_llm.responder = summary_responder
    workflow = summarizing_workflow(make_workflow, provider)
    turns = converse(chat, workflow["id"], [f"m{i}" for i in range(1, 6)])

    agent_requests = fake_llm.requests_for("agent-model")
    summarizer_requests = fake_llm.requests_for("cheap-model")
    assert len(agent_requests) == 5 and len(summarizer_requests) == 1
    for turn, received in zip(turns, agent_requests):
        run = api.get(f"/api/runs/{turn['run']}/").json()
        steps = {s["node"]: s for s in run["steps"]}
        assert steps["agent"]["messages"] == received.messages
        # nodes that call no model carry none
        assert steps["chat"]["messages"] is None and steps["out"]["messages"] is None

    summarized = api.get(f"/api/runs/{turns[3]['run']}/").json()["summarizations"]
    assert [s["messages"] for s in summarized] == [summarizer_requests[0].messages]


def test_a_failed_model_call_still_records_what_was_sent(make_workflow, provider, chat, fake_llm, api):
    from tests.fakellm import Reply

    fake_llm.responder = lambda request: Reply(status=400, text="refused")
    workflow = make_workflow(chat_graph(provider.pk, memory={"type": "memory.buffer"}))
    turn = chat(workflow["id"], "hello")
    assert turn["status"] == "failed"
    [received] = fake_llm.requests_for("agent-model")
    steps = {s["node"]: s for s in api.get(f"/api/runs/{turn['run']}/").json()["steps"]}
    assert steps["agent"]["status"] == "failed" and steps["agent"]["messages"] == received.messages
