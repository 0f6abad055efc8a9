"""Property-based tests (hypothesis) of the memory strategies' invariants."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.registry import get_node_type
from memory import selectors, services, strategies
from memory.models import HistoryMessage
from memory.tokens import default_tokenizer
from workflows.models import Workflow

pytestmark = pytest.mark.django_db

PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",), exclude_characters="\x00"), min_size=0, max_size=40)
conversations = st.lists(st.tuples(st.sampled_from(["user", "assistant"]), texts), min_size=0, max_size=40)
_keys = itertools.count()


@pytest.fixture
def workflow(user):
    return Workflow.objects.create(owner=user, name="props", graph={})


def fresh_history(workflow, messages):
    history = services.history_get_or_create(workflow_id=workflow.pk, kind="named", name="h", key=f"thread:{next(_keys)}")
    services.history_append(history=history, messages=[{"role": r, "content": c} for r, c in messages])
    return history


TOKENIZER = default_tokenizer()
FIELDS = ("seq", "role", "content", "token_count")


def spec(memory_type, **values):
    """The memory node's spec, as its node type builds it for memory/."""
    node_type = get_node_type(memory_type)
    return node_type.memory_spec("m", node_type.Params.model_validate(values), lambda port: [])


def plan(memory, history):
    return strategies.plan(memory, history, TOKENIZER)


def rows(messages):
    return [{field: m[field] for field in FIELDS} for m in messages]


def stored(history):
    everything = list(HistoryMessage.objects.filter(history=history).order_by("seq").values("id", "seq", "role", "content", "token_counts"))
    selectors.counted(everything, TOKENIZER)
    return rows(everything)


@PROPERTY
@given(messages=conversations, k=st.integers(min_value=1, max_value=50))
def test_a_window_never_sends_more_than_k_and_sends_the_newest(workflow, messages, k):
    history = fresh_history(workflow, messages)
    kept = rows(plan(spec("memory.window", max_messages=k), history).kept)
    assert len(kept) == min(k, len(messages))
    assert kept == stored(history)[len(messages) - len(kept) :]


@PROPERTY
@given(messages=conversations, limit=st.integers(min_value=1, max_value=200))
def test_a_token_window_fits_its_limit_and_is_as_long_as_it_can_be(workflow, messages, limit):
    history = fresh_history(workflow, messages)
    kept = rows(plan(spec("memory.window", max_tokens=limit), history).kept)
    everything = stored(history)
    assert sum(m["token_count"] for m in kept) <= limit
    assert kept == everything[len(everything) - len(kept) :]
    if len(kept) < len(everything):  # the next older message would not have fitted
        assert sum(m["token_count"] for m in kept) + everything[-len(kept) - 1]["token_count"] > limit


@PROPERTY
@given(
    rounds=st.lists(conversations, min_size=1, max_size=5),
    max_messages=st.integers(min_value=2, max_value=12),
    keep_fraction=st.floats(min_value=0, max_value=0.99),
)
def test_summary_plus_kept_messages_always_cover_the_whole_history_in_order(workflow, rounds, max_messages, keep_fraction):
    keep_last = int(keep_fraction * max_messages)
    memory = spec("memory.summary", max_messages=max_messages, keep_last=keep_last)
    history = fresh_history(workflow, [])
    covered: list[int] = []
    for batch in rounds:
        services.history_append(history=history, messages=[{"role": r, "content": c} for r, c in batch])
        history.refresh_from_db()
        due = plan(memory, history)
        if due.to_summarize:
            assert len(due.kept) == keep_last
            covered += [m["seq"] for m in due.to_summarize]
            assert services.summary_save(
                history=history, memory_node="m", text="s", previous_through=due.summary_through, through_seq=due.to_summarize[-1]["seq"]
            )
        after = plan(memory, history)
        seen = covered + [m["seq"] for m in after.to_summarize + after.kept]
        assert seen == [m["seq"] for m in stored(history)]  # every message once, in order


@PROPERTY
@given(before=conversations, replacement=conversations)
def test_replacing_a_history_never_shrinks_what_is_stored(workflow, before, replacement):
    history = fresh_history(workflow, before)
    count = HistoryMessage.objects.filter(history=history).count()
    services.history_replace(history=history, messages=[{"role": r, "content": c} for r, c in replacement])
    assert HistoryMessage.objects.filter(history=history).count() == count + len(replacement)
    kept = plan(spec("memory.buffer"), history).kept
    assert [(m["role"], m["content"]) for m in kept] == list(replacement)


@PROPERTY
@given(
    steps=st.lists(st.tuples(st.booleans(), conversations), min_size=1, max_size=6),
    max_messages=st.integers(min_value=2, max_value=8),
    keep_last=st.integers(min_value=0, max_value=1),
)
def test_replacements_and_summaries_meet_every_due_summary_is_kept_and_extended(workflow, steps, max_messages, keep_last):
    """Appends and replacements in any order, a summarization whenever one is due: each due
    summary is stored (never refused because a replacement came first), the next one extends it,
    and what is sent never holds more than the threshold's worth of unsummarized messages."""
    memory = spec("memory.summary", max_messages=max_messages, keep_last=keep_last)
    history = fresh_history(workflow, [])
    for replace, batch in steps:
        messages = [{"role": r, "content": c} for r, c in batch]
        if replace:
            services.history_replace(history=history, messages=messages)
        else:
            services.history_append(history=history, messages=messages)
        history.refresh_from_db()
        due = plan(memory, history)
        while due.to_summarize:
            text = f"summary through {due.to_summarize[-1]['seq']}"
            assert services.summary_save(
                history=history, memory_node="m", text=text, previous_through=due.summary_through, through_seq=due.to_summarize[-1]["seq"]
            )
            after = plan(memory, history)
            assert after.summary == text and after.summary_through == due.to_summarize[-1]["seq"]
            due = after
        assert len(due.kept) < max_messages
        live = [m["seq"] for m in stored(history) if m["seq"] > history.replaced_through]
        assert [m["seq"] for m in due.kept] == live[len(live) - len(due.kept) :]
