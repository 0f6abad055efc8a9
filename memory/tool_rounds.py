"""Tool rounds in a history (docs/memory.md#tool-rounds): an assistant message with ``tool_calls``
and the ``tool`` messages answering each call are history messages like any other, kept together:

- a call is never sent without every one of its results, nor a result without its call (a window or
  a summary's split moves to keep or drop the round whole: ``whole_rounds``, ``round_start``);
- a replaced history (``set_history``, the memory API) must pair them (``pairing_problem``);
- a model that calls no tools is sent earlier rounds as plain text (``as_text``), and so is the
  summarizer, which folds them like other messages.
"""

from __future__ import annotations

import json

TOOL = "tool"
MAX_TEXT_RESULT = 2000  # characters of a result shown to a model that reads rounds as text


def is_call(message: dict) -> bool:
    return message.get("role") == "assistant" and bool(message.get("tool_calls"))


def is_result(message: dict) -> bool:
    return message.get("role") == TOOL


def call_ids(message: dict) -> list[str]:
    return [str(call.get("id", "")) for call in message.get("tool_calls") or []]


def whole_rounds(messages: list[dict]) -> list[dict]:
    """``messages`` (the newest of a history) without a round cut at either end: results whose call
    is not among them, and a call whose results are not all there."""
    start = 0
    while start < len(messages) and is_result(messages[start]):
        start += 1
    kept = messages[start:]
    end = len(kept)
    while end:  # the newest round is whole unless a call there lacks one of its results
        last_call = next((i for i in range(end - 1, -1, -1) if is_call(kept[i])), None)
        if last_call is None:
            break
        answered = {m.get("tool_call_id") for m in kept[last_call + 1 : end] if is_result(m)}
        if set(call_ids(kept[last_call])) <= answered:
            break
        end = last_call
    return kept[:end]


def round_start(messages: list[dict], index: int) -> int:
    """Where to split ``messages`` at ``index`` without cutting a round: moved back to its call."""
    while 0 < index < len(messages) and is_result(messages[index]):
        index -= 1
    return index


def pairing_problem(messages: list[dict]) -> str | None:
    """The first broken pair of a list of messages (OpenAI's shape), said for people, or None."""
    open_calls: dict[str, int] = {}
    for position, message in enumerate(messages, start=1):
        if is_result(message):
            call_id = message.get("tool_call_id")
            if not call_id:
                return f"message {position} is a tool result without a tool_call_id"
            if call_id not in open_calls:
                return f"message {position} answers tool call '{str(call_id)[:100]}', which no earlier assistant message made"
            del open_calls[call_id]
            continue
        if open_calls:
            first = next(iter(open_calls))
            return f"tool call '{first[:100]}' of message {open_calls[first]} has no result before message {position}"
        if message.get("tool_calls") is not None:
            if message.get("role") != "assistant":
                return f"message {position}: only an assistant message makes tool calls"
            for call in message["tool_calls"]:
                problem = _call_problem(call)
                if problem:
                    return f"message {position}: {problem}"
                open_calls[str(call["id"])] = position
    if open_calls:
        first = next(iter(open_calls))
        return f"tool call '{first[:100]}' of message {open_calls[first]} has no result"
    return None


def _call_problem(call) -> str | None:
    if not isinstance(call, dict) or not isinstance(call.get("id"), str) or not call["id"]:
        return "each tool call needs an id (a string)"
    function = call.get("function")
    if call.get("type", "function") != "function" or not isinstance(function, dict) or not isinstance(function.get("name"), str):
        return f"tool call '{call['id'][:100]}' must be {{type: 'function', function: {{name, arguments}}}}"
    if not isinstance(function.get("arguments", ""), str):
        return f"tool call '{call['id'][:100]}': arguments must be a JSON string"
    return None


def countable(message: dict) -> str:
    """What a message's tokens are counted over: its content and the calls it makes."""
    calls = message.get("tool_calls")
    return (message.get("content") or "") + (json.dumps(calls, ensure_ascii=False) if calls else "")


def as_openai(message: dict) -> dict:
    """A history message as a model that calls tools is sent it."""
    sent = {"role": message["role"], "content": message["content"]}
    if message.get("tool_calls"):
        sent["tool_calls"] = message["tool_calls"]
    if message.get("tool_call_id"):
        sent["tool_call_id"] = message["tool_call_id"]
    return sent


def as_text(messages: list[dict]) -> list[dict]:
    """Messages as a model that calls no tools reads them: each call and each result becomes an
    assistant message in words (results cut at ``MAX_TEXT_RESULT`` characters)."""
    names: dict[str, str] = {}
    shown = []
    for message in messages:
        if is_call(message):
            parts = [message["content"]] if message.get("content") else []
            for call in message["tool_calls"]:
                function = call.get("function") or {}
                names[str(call.get("id"))] = function.get("name", "a tool")
                parts.append(f"(called {function.get('name', 'a tool')} with {function.get('arguments') or '{}'})")
            shown.append({"role": "assistant", "content": "\n".join(parts)})
        elif is_result(message):
            result = message.get("content") or ""
            result = result if len(result) <= MAX_TEXT_RESULT else result[:MAX_TEXT_RESULT] + "…"
            shown.append({"role": "assistant", "content": f"({names.get(message.get('tool_call_id'), 'the tool')} returned: {result})"})
        else:
            shown.append({"role": message["role"], "content": message["content"]})
    return shown
