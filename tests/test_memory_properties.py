"""Property-based tests (hypothesis) of the memory strategies' invariants."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory import services, strategies
from memory.models import HistoryMessage
from workflows.engine.registry import get_node_type
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


def params(memory_type, **values):
    return get_node_type(memory_type).Params.model_validate(values)


def stored(history):
    return list(HistoryMessage.objects.filter(history=history).order_by("seq").values("seq", "role", "content", "token_count"))


@PROPERTY
@given(messages=conversations, k=st.integers(min_value=1, max_value=50))
def test_a_window_never_sends_more_than_k_and_sends_the_newest(workflow, messages, k):
    history = fresh_history(workflow, messages)
    kept = strategies.plan("memory.window", params("memory.window", max_messages=k), history, "m").kept
    assert len(kept) == min(k, len(messages))
    assert kept == stored(history)[len(messages) - len(kept):]


@PROPERTY
@given(messages=conversations, limit=st.integers(min_value=1, max_value=200))
def test_a_token_window_fits_its_limit_and_is_as_long_as_it_can_be(workflow, messages, limit):
    history = fresh_history(workflow, messages)
    kept = strategies.plan("memory.window", params("memory.window", max_messages=None, max_tokens=limit), history, "m").kept
    everything = stored(history)
    assert sum(m["token_count"] for m in kept) <= limit
    assert kept == everything[len(everything) - len(kept):]
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
    memory = params("memory.summary", max_messages=max_messages, keep_last=keep_last)
    history = fresh_history(workflow, [])
    covered: list[int] = []
    for batch in rounds:
        services.history_append(history=history, messages=[{"role": r, "content": c} for r, c in batch])
        history.refresh_from_db()
        plan = strategies.plan("memory.summary", memory, history, "m")
        if plan.to_summarize:
            assert len(plan.kept) == keep_last
            covered += [m["seq"] for m in plan.to_summarize]
            assert services.summary_save(
                history=history, memory_node="m", text="s", previous_through=plan.summary_through, through_seq=plan.to_summarize[-1]["seq"]
            )
        after = strategies.plan("memory.summary", memory, history, "m")
        seen = covered + [m["seq"] for m in after.to_summarize + after.kept]
        assert seen == [m["seq"] for m in stored(history)]  # every message once, in order


@PROPERTY
@given(before=conversations, replacement=conversations)
def test_replacing_a_history_never_shrinks_what_is_stored(workflow, before, replacement):
    history = fresh_history(workflow, before)
    count = HistoryMessage.objects.filter(history=history).count()
    services.history_replace(history=history, messages=[{"role": r, "content": c} for r, c in replacement])
    assert HistoryMessage.objects.filter(history=history).count() == count + len(replacement)
    kept = strategies.plan("memory.buffer", params("memory.buffer"), history, "m").kept
    assert [(m["role"], m["content"]) for m in kept] == list(replacement)
