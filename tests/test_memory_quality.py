"""The memory-quality benchmark's generator and scorer, and the summary's merge of what the
participant said (memory/summary_prompt.py): pure functions, no database, no model."""

from __future__ import annotations

import re

from bench.memory_quality_data import CLOSING, SLOTS, Fact, answer_correct, generate, score
from memory.summary_prompt import (
    DEFAULT_SUMMARY_PROMPT,
    FACTS_HEADING,
    MAX_NOTES,
    notes_merge,
    statements,
    summary_from_reply,
    summary_parts,
    summary_request,
)


def user(text):
    return {"role": "user", "content": text}


def assistant(text):
    return {"role": "assistant", "content": text}


# --- the generator ---------------------------------------------------------------------------------
def test_the_generator_is_seeded():
    assert generate(200, 7).messages == generate(200, 7).messages
    assert generate(200, 7).facts == generate(200, 7).facts
    assert generate(200, 7).messages != generate(200, 8).messages


def test_every_fact_and_every_change_is_stated_by_the_participant():
    for size, slots, changes, sessions in ((40, 6, 2, 2), (200, 10, 4, 4), (1000, 12, 6, 8)):
        conversation = generate(size, 16)
        assert len(conversation.messages) == size and conversation.sessions == sessions
        assert [m["role"] for m in conversation.messages] == ["user", "assistant"] * (size // 2)
        assert len(conversation.facts) == slots and len({f.slot for f in conversation.facts}) == slots
        assert len(conversation.changed) == changes
        said = [m["content"] for m in conversation.messages if m["role"] == "user"]
        replies = " ".join(m["content"] for m in conversation.messages if m["role"] == "assistant")
        for fact in conversation.facts:
            stated = [i for i, text in enumerate(said) if re.search(rf"\b{re.escape(fact.value)}\b", text)]
            assert stated, (size, fact)
            assert fact.value not in replies  # the scripted assistant never repeats a fact
            if fact.old:
                first_old = min(i for i, text in enumerate(said) if fact.old in text)
                assert first_old < stated[-1]  # the old value came first, the change later
                assert fact.changed_session is not None and fact.changed_session >= fact.stated_session
        assert said[-1] == CLOSING


def test_conversations_have_distractors_and_pasted_text_over_sessions():
    conversation = generate(200, 16)
    said = [m["content"] for m in conversation.messages if m["role"] == "user"]
    assert any(len(text.split()) > 80 for text in said)  # long pasted text
    assert sum(text.endswith("?") for text in said) >= 20  # questions
    assert len(conversation.turns(0)) + len(conversation.turns(3)) < len(conversation.turns())
    filler = " ".join(t for t in said if not any(f.value in t or (f.old and f.old in t) for f in conversation.facts))
    for slot in SLOTS.values():  # no value ever appears in filler: containment cannot be fooled
        assert not any(re.search(rf"\b{re.escape(v)}\b", filler) for v in slot["values"])


# --- the scorer ------------------------------------------------------------------------------------
FACTS = [Fact("name", "Alice", "What is my name?"), Fact("city", "Porto", "Where do I live?", old="Lisbon")]


def test_a_fact_present_absent_and_stale():
    present = score([user("My name is Alice."), user("I moved from Lisbon to Porto.")], FACTS)
    assert (present.present, present.retention, present.stale, present.stale_pct) == (2, 100.0, 0, 0.0)

    absent = score([user("My name is Alicia."), assistant("Nice to meet you.")], FACTS)
    assert (absent.present, absent.missing, absent.stale) == (0, ["name", "city"], 0)

    stale = score("The user is Alice, who lives in Lisbon.", FACTS)
    assert (stale.present, stale.stale, stale.stale_slots, stale.stale_pct) == (1, 1, ["city"], 100.0)


def test_values_match_whole_words_only_and_answers_by_containment():
    assert score("Porto is lovely; Alice said so", FACTS).present == 2
    assert score("Portobello Alicee", FACTS).present == 0
    assert answer_correct("You live in porto.", FACTS[1]) and not answer_correct("You live in Lisbon.", FACTS[1])


# --- the summary's notes: what the participant said, merged ----------------------------------------
def test_statements_are_the_participants_first_person_sentences():
    messages = [
        user("Hi! My name is Alice and I live in Lisbon. How are you?"),
        assistant("I am fine, my friend."),
        user("What is the capital of France? Tell me a joke. Home for me is Porto."),
        user("Here is a long text: " + "the river and the valley " * 40 + "I was there."),
    ]
    assert statements(messages) == ["My name is Alice and I live in Lisbon.", "Home for me is Porto."]


def test_a_changed_fact_supersedes_the_old_statement_and_the_newest_wins():
    notes = notes_merge([], ["I live in Lisbon.", "My name is Alice.", "My favourite colour is teal."])
    notes = notes_merge(notes, ["I moved from Lisbon to Porto last month.", "My favourite colour is amber now."])
    assert notes == ["My name is Alice.", "I moved from Lisbon to Porto last month.", "My favourite colour is amber now."]
    # A repeat is kept once, as the newest. A change in another shape that names no old value stays
    # beside the old statement, newest last: the new value is there, so nothing is stale.
    notes = notes_merge(notes, ["I live in Braga now.", "My name is Alice."])
    assert notes == [
        "I moved from Lisbon to Porto last month.",
        "My favourite colour is amber now.",
        "I live in Braga now.",
        "My name is Alice.",
    ]
    assert score("\n".join(notes), [Fact("city", "Braga", "", old="Porto")]).stale == 0
    assert notes_merge(notes, ["I live in Faro."])[-2:] == ["My name is Alice.", "I live in Faro."]  # same subject
    assert "I live in Braga now." not in notes_merge(notes, ["I live in Faro."])


def test_unrelated_statements_are_all_kept_and_the_notes_are_bounded():
    notes = notes_merge(
        [], ["I have a dog named Biscuit.", "I have a sister, Marisol.", "I'm allergic to peanuts.", "I'm also allergic to cats."]
    )
    assert len(notes) == 4
    many = notes_merge([], [f"My locker number {i} is {1000 + i}." for i in range(MAX_NOTES + 5)])
    assert len(many) == MAX_NOTES and many[-1] == f"My locker number {MAX_NOTES + 4} is {1000 + MAX_NOTES + 4}."


def test_the_summary_extends_the_previous_one_without_echoed_scaffolding():
    first_batch = [user("Hi! My name is Alice."), assistant("Hello Alice!"), user("I live in Lisbon.")]
    request = summary_request(prompt=DEFAULT_SUMMARY_PROMPT, previous_summary="", messages=first_batch)
    assert request[0] == {"role": "system", "content": DEFAULT_SUMMARY_PROMPT}
    assert "Hello Alice!" not in request[1]["content"]  # only the participant's own messages
    echo = "Summary so far:\n(none yet)\nNew messages from the user:\n- I live in Lisbon.\nThe user introduced themselves."
    first = summary_from_reply(previous_summary="", reply=echo, messages=first_batch, prompt=DEFAULT_SUMMARY_PROMPT, request=request)
    assert first.startswith(FACTS_HEADING)
    assert summary_parts(first) == (["My name is Alice.", "I live in Lisbon."], ["The user introduced themselves."])

    second_batch = [user("I moved from Lisbon to Porto."), assistant("Nice!"), user("Tell me a joke?")]
    request = summary_request(prompt=DEFAULT_SUMMARY_PROMPT, previous_summary=first, messages=second_batch)
    assert first in request[1]["content"]  # the previous summary goes with the request
    second = summary_from_reply(
        previous_summary=first, reply="They asked for a joke.", messages=second_batch, prompt=DEFAULT_SUMMARY_PROMPT, request=request
    )
    assert summary_parts(second) == (
        ["My name is Alice.", "I moved from Lisbon to Porto."],
        ["The user introduced themselves.", "They asked for a joke."],
    )


def test_a_users_own_prompt_gets_the_transcript_and_writes_the_narrative():
    prompt = "Résume la conversation en français."
    messages = [user("My name is Alice."), assistant("Bonjour Alice")]
    request = summary_request(prompt=prompt, previous_summary="Alice a dit bonjour.", messages=messages)
    assert request[0]["content"] == prompt
    assert "Alice a dit bonjour." in request[1]["content"] and "assistant: Bonjour Alice" in request[1]["content"]
    text = summary_from_reply(
        previous_summary="Alice a dit bonjour.",
        reply="Alice s'est présentée.\nElle parle français.",
        messages=messages,
        prompt=prompt,
        request=request,
    )
    assert summary_parts(text) == (["My name is Alice."], ["Alice s'est présentée.", "Elle parle français."])
