"""What each memory strategy sends a model (DESIGN.md §4): seed messages, then the summary (if
any), then the kept history. Strategies read through selectors and never load more of a history
than they send (summaries aside, which read what they fold in)."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import selectors

SUMMARY_PREFIX = "Summary of the earlier conversation:\n"


@dataclass
class Plan:
    """What a memory will send, and whether a summarization is due first."""

    kept: list[dict]
    summary: str = ""
    summary_through: int = 0
    to_summarize: list[dict] = field(default_factory=list)


def plan(memory_type: str, params, history, memory_node: str) -> Plan:
    if history is None:
        return Plan(kept=[])
    if memory_type == "memory.window":
        return _window(params, history)
    if memory_type == "memory.summary":
        return _summary(params, history, memory_node)
    return Plan(kept=selectors.history_all(history=history))


def _window(params, history) -> Plan:
    if params.max_tokens is not None:
        kept = selectors.history_newest_within(
            history=history, max_tokens=params.max_tokens, max_messages=params.max_messages
        )
    else:
        kept = selectors.history_newest(history=history, count=params.max_messages)
    return Plan(kept=kept)


def _summary(params, history, memory_node: str) -> Plan:
    summary = selectors.summary_for(history=history, memory_node=memory_node)
    through = max(summary.covers_through if summary else 0, history.replaced_through)
    text = summary.text if summary and summary.covers_through >= history.replaced_through else ""
    # What the summary does not cover yet stays small: at most the threshold, unless summaries fail.
    pending = selectors.history_all(history=history, after_seq=through)
    due = (params.max_messages is not None and len(pending) >= params.max_messages) or (
        params.max_tokens is not None and sum(m["token_count"] for m in pending) >= params.max_tokens
    )
    if not due or len(pending) <= params.keep_last:
        return Plan(kept=pending, summary=text, summary_through=through)
    split = len(pending) - params.keep_last
    return Plan(kept=pending[split:], summary=text, summary_through=through, to_summarize=pending[:split])


def context_messages(seed_messages, summary: str, kept: list[dict]) -> list[dict]:
    messages = [{"role": m.role, "content": m.content} for m in seed_messages]
    if summary:
        messages.append({"role": "system", "content": SUMMARY_PREFIX + summary})
    messages.extend({"role": m["role"], "content": m["content"]} for m in kept)
    return messages
