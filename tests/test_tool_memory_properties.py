"""Property-based tests (hypothesis) of tool rounds in memory (memory/tool_rounds.py): over random
mixes of messages and tool rounds, a window or a summary's split never sends a tool result without
its call, nor a call without all its results; each round is kept or dropped whole."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.registry import get_node_type
from memory import services, strategies
from memory.tokens import default_tokenizer
from memory.tool_rounds import pairing_problem
from workflows.models import Workflow

pytestmark = pytest.mark.django_db

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
TOKENIZER = default_tokenizer()
_keys = itertools.count()
_calls = itertools.count()
words = st.text(alphabet="abcdefgh ", min_size=0, max_size=30)


@st.composite
def tool_round(draw) -> list[dict]:
    """An assistant message calling 1-3 tools, then each call's result."""
    ids = [f"c{next(_calls)}" for _ in range(draw(st.integers(min_value=1, max_value=3)))]
    call = {
        "role": "assistant",
        "content": draw(words),
        "tool_calls": [{"id": i, "type": "function", "function": {"name": "lookup", "arguments": "{}"}} for i in ids],
    }
    return [call] + [{"role": "tool", "tool_call_id": i, "content": draw(words)} for i in ids]


plain = st.tuples(st.sampled_from(["user", "assistant"]), words).map(lambda m: [{"role": m[0], "content": m[1]}])
histories = st.lists(st.one_of(plain, tool_round()), min_size=0, max_size=25).map(lambda parts: [m for part in parts for m in part])


@pytest.fixture
def workflow(user):
    return Workflow.objects.create(owner=user, name="tool rounds", graph={})


def fresh_history(workflow, messages):
    history = services.history_get_or_create(workflow_id=workflow.pk, kind="named", name="h", key=f"thread:{next(_keys)}")
    services.history_append(history=history, messages=messages)
    return history


def spec(memory_type, **values):
    node_type = get_node_type(memory_type)
    return node_type.memory_spec("m", node_type.Params.model_validate(values), lambda port: [])


def sent(messages: list[dict]) -> list[dict]:
    return strategies.context_messages((), "", messages, tools=True)


def is_suffix(part: list[dict], whole: list[dict]) -> bool:
    return not part or whole[len(whole) - len(part) :] == part


@PROPERTY
@given(messages=histories, k=st.integers(min_value=1, max_value=30))
def test_a_message_window_keeps_rounds_whole(workflow, messages, k):
    kept = sent(strategies.plan(spec("memory.window", max_messages=k), fresh_history(workflow, messages), TOKENIZER).kept)
    assert pairing_problem(kept) is None
    assert len(kept) <= k and is_suffix(kept, messages)
    # as long as it can be: only a round that would be cut was dropped
    assert len(kept) >= min(k, len(messages)) - 3


@PROPERTY
@given(messages=histories, limit=st.integers(min_value=1, max_value=300))
def test_a_token_window_keeps_rounds_whole_within_its_limit(workflow, messages, limit):
    plan = strategies.plan(spec("memory.window", max_tokens=limit), fresh_history(workflow, messages), TOKENIZER)
    assert sum(m["token_count"] for m in plan.kept) <= limit
    kept = sent(plan.kept)
    assert pairing_problem(kept) is None and is_suffix(kept, messages)


@PROPERTY
@given(messages=histories, keep_last=st.integers(min_value=1, max_value=10))
def test_a_summary_folds_whole_rounds_and_keeps_whole_rounds(workflow, messages, keep_last):
    memory = spec("memory.summary", max_messages=max(keep_last + 1, 2), keep_last=keep_last)
    plan = strategies.plan(memory, fresh_history(workflow, messages), TOKENIZER)
    folded, kept = sent(plan.to_summarize), sent(plan.kept)
    assert pairing_problem(folded) is None and pairing_problem(kept) is None
    assert folded + kept == messages
