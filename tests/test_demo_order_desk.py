"""The demo order desk, for real: an agent on the bundled local model (SmolLM2-135M on llama.cpp)
that must call its tool first, a ``tool.workflow`` running the demo order lookup (a template over
a small order table), all offline, through the chat API and the real executor. What the model is
sent in each round is asserted; what it answers, and which order number it asks for, are the
135M model's to choose (docs/tools.md#the-bundled-model-and-tools)."""

from __future__ import annotations

import json

import pytest

from demo import seed as demo
from runs.models import Run, RunStep
from workflows.samples import ORDER_DESK, ORDER_LOOKUP

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_turn_of_the_order_desk_sends_the_lookups_answer_back_to_the_model_after_its_call(chat, user, monkeypatch):
    monkeypatch.setattr(demo, "REPLY_TOKENS", 24)  # short replies: the test stays short
    demo.local_provider_get_or_create(owner=user)
    seeded = {w.name: w for w in demo.demo_seed(owner=user)}
    desk, lookup = seeded[ORDER_DESK], seeded[ORDER_LOOKUP]

    turn = chat(desk.pk, "Where is my order 1042?")
    assert turn["status"] == "succeeded", turn

    step = RunStep.objects.get(run_id=turn["run"], node="assistant")
    first, second = step.rounds[0], step.rounds[1]
    assert first["tool_choice"] == "required"  # the desk must look the order up before it answers
    assert [t["function"]["name"] for t in first["tools"]] == ["lookup_order"]
    assert first["messages"][-1] == {"role": "user", "content": "Where is my order 1042?"}
    [call] = first["tool_calls"]
    assert call["name"] == "lookup_order" and call["error"] == ""  # the only tool: the grammar allows no other
    message = json.loads(call["arguments"])["message"]
    assert isinstance(message, str)

    # The lookup ran as a turn of its own, on what the model asked for; its reply is the result.
    [looked_up] = Run.objects.filter(workflow=lookup)
    assert looked_up.status == "succeeded" and looked_up.input == message
    assert call["result"] == looked_up.output and looked_up.output.startswith(("Order ", "No order matches"))

    # Round two: the call, then its result as a tool message answering it, after what round one was sent.
    assert second["messages"][: len(first["messages"])] == first["messages"]
    assert second["messages"][len(first["messages"]) :] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": call["id"], "type": "function", "function": {"name": "lookup_order", "arguments": call["arguments"]}}],
        },
        {"role": "tool", "tool_call_id": call["id"], "content": looked_up.output},
    ]
    assert second["tool_choice"] is None  # then the model chooses: answer, or look again
