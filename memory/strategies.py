"""What each memory strategy sends a model (docs/memory.md#strategies): seed messages, then the summary (if
any), then the kept history. Strategies read through selectors and never load more of a history
than they send (summaries aside, which read what they fold in).

``plan`` decides, as a value; ``memory.runtime`` performs it (summarizes, stores counts).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memory import selectors
from memory.spec import Buffer, MemorySpec, Summary, Window
from memory.tokens import Tokenizer
from memory.tool_rounds import as_openai, as_text, round_start, whole_rounds

SUMMARY_PREFIX = "Summary of the earlier conversation:\n"
# A window with no limit set at all keeps this many messages (docs/memory.md#window-memorywindow).
DEFAULT_WINDOW_MESSAGES = 20


@dataclass
class Plan:
    """What a memory will send, and whether a summarization is due first."""

    kept: list[dict]
    summary: str = ""
    summary_through: int = 0
    to_summarize: list[dict] = field(default_factory=list)
    # Rows counted for the first time with this tokenizer: the runtime stores their counts.
    counted: list[dict] = field(default_factory=list)


def plan(spec: MemorySpec, history, tokenizer: Tokenizer) -> Plan:
    if history is None:
        return Plan(kept=[])
    strategy = spec.strategy
    if isinstance(strategy, Window):
        return _window(strategy, history, tokenizer)
    if isinstance(strategy, Summary):
        return _summary(strategy, history, spec.node, tokenizer)
    assert isinstance(strategy, Buffer), strategy
    kept = selectors.history_all(history=history)
    return Plan(kept=kept, counted=selectors.counted(kept, tokenizer))


def _window(window: Window, history, tokenizer: Tokenizer) -> Plan:
    """The newest messages within the limits, a tool round kept or dropped whole."""
    if window.max_tokens is not None:
        kept, counted = selectors.history_newest_within(
            history=history, max_tokens=window.max_tokens, max_messages=window.max_messages, tokenizer=tokenizer
        )
        return Plan(kept=whole_rounds(kept), counted=counted)
    kept = selectors.history_newest(history=history, count=window.max_messages or DEFAULT_WINDOW_MESSAGES)
    return Plan(kept=whole_rounds(kept), counted=selectors.counted(kept, tokenizer))


def _summary(strategy: Summary, history, memory_node: str, tokenizer: Tokenizer) -> Plan:
    text, through = selectors.summary_state(history=history, summary=selectors.summary_for(history=history, memory_node=memory_node))
    # What the summary does not cover yet stays small: at most the threshold, unless summaries fail.
    pending = selectors.history_all(history=history, after_seq=through)
    counted = selectors.counted(pending, tokenizer)
    due = (strategy.max_messages is not None and len(pending) >= strategy.max_messages) or (
        strategy.max_tokens is not None and sum(m["token_count"] for m in pending) >= strategy.max_tokens
    )
    if not due or len(pending) <= strategy.keep_last:
        return Plan(kept=pending, summary=text, summary_through=through, counted=counted)
    split = round_start(pending, len(pending) - strategy.keep_last)  # a tool round stays whole on one side
    if split == 0:
        return Plan(kept=pending, summary=text, summary_through=through, counted=counted)
    return Plan(kept=pending[split:], summary=text, summary_through=through, to_summarize=pending[:split], counted=counted)


def context_messages(seeds, summary: str, kept: list[dict], *, tools: bool = False) -> list[dict]:
    """What the memory contributes, in order: seeds, the summary (as one system message), the kept
    history; its tool rounds as tool messages to a model that calls tools, else as text."""
    messages = [{"role": m["role"], "content": m["content"]} for m in seeds]
    if summary:
        messages.append({"role": "system", "content": SUMMARY_PREFIX + summary})
    messages.extend([as_openai(m) for m in kept] if tools else as_text(kept))
    return messages
