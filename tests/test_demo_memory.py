"""The demo summarizing chatbot remembers who the participant is, for real: on the bundled local
model (SmolLM2-135M on llama.cpp), replies kept short, asked 20 turns after being told. What the
model is sent is asserted exactly; how the 135M model words its answer depends on the CPU's
kernels (AVX2-only, AVX-512, AMX), so it is measured in bench/ (memory_quality), not here."""

from __future__ import annotations

import pytest

from demo import seed as demo
from memory.models import Summarization, Summary
from memory.strategies import SUMMARY_PREFIX
from runs.models import RunStep

pytestmark = pytest.mark.django_db(transaction=True)

FILLER = [
    "What is the capital of France?",
    "Tell me a fun fact about octopuses.",
    "How many legs does a spider have?",
    "What colour is the sky on Mars?",
    "Give me a word that rhymes with cat.",
    "What is two plus two?",
    "Name a famous painter.",
    "What do bees make?",
    "Which planet is the largest?",
    "What is water made of?",
    "How many days are in a week?",
    "What is the opposite of hot?",
    "Name a fruit that is yellow.",
    "What do cows drink?",
    "Which ocean is the biggest?",
    "What is the boiling point of water?",
    "Name an animal that can fly.",
    "How many hours are in a day?",
    "What language is spoken in Brazil?",
    "What is a baby cat called?",
]


def test_the_summarizing_demo_is_sent_name_and_city_20_turns_after_being_told(chat, user, monkeypatch):
    monkeypatch.setattr(demo, "REPLY_TOKENS", 24)  # short replies: the test stays short
    demo.local_provider_get_or_create(owner=user)
    [bot] = [w for w in demo.demo_seed(owner=user) if w.name == "Demo: summarizing chatbot (summary)"]

    told = chat(bot.pk, "Hi! My name is Alice and I live in Lisbon.")
    thread = told["thread"]
    for message in FILLER:
        assert chat(bot.pk, message, thread=thread)["status"] == "succeeded"
    answer = chat(bot.pk, "What is my name and where do I live?", thread=thread)

    assert answer["status"] == "succeeded" and answer["warnings"] == []
    # What the model was sent: the fact reached it through the summary, not the kept messages.
    sent = RunStep.objects.get(run_id=answer["run"], node="assistant").messages
    summary = [m["content"] for m in sent if m["content"].startswith(SUMMARY_PREFIX)]
    assert summary and "My name is Alice and I live in Lisbon." in summary[0]
    assert not any("Alice" in m["content"] for m in sent if m["role"] == "user" and m is not sent[-1])
    stored = Summary.objects.get(history__key=f"thread:{thread}", memory_node="memory")
    assert "Summary so far" not in stored.text and "New messages" not in stored.text  # no scaffolding echoed
    assert Summarization.objects.filter(status="ok").count() >= 5
    assert sent[-1] == {"role": "user", "content": "What is my name and where do I live?"}
