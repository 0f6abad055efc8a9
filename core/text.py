"""Text as the database can keep it: PostgreSQL refuses NUL in text and JSON, so it becomes U+FFFD.

Used where text comes from models or nodes (replies, step outputs); input from people is refused
with a 400 instead (``core.parsers``)."""

from __future__ import annotations

import json
from typing import Any

REPLACEMENT = "\ufffd"
# Request data nests at most this deep (a graph needs about eight levels): deeper JSON is a 400,
# and nothing recurses on what a client sent.
MAX_JSON_DEPTH = 64


class BadJSON(ValueError):
    """Request data Skein refuses: malformed, nested too deep, or with NUL characters."""


def storable(text: str) -> str:
    return text.replace("\x00", REPLACEMENT) if "\x00" in text else text


def storable_json(value: Any) -> Any:
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {storable(str(k)): storable_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [storable_json(v) for v in value]
    return value


def _walk(value: Any):
    """(item, depth) for every value inside ``value`` and every key, without recursion."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        yield item, depth
        if isinstance(item, dict):
            stack.extend((k, depth) for k in item)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)


def contains_nul(value: Any) -> bool:
    return any(isinstance(item, str) and "\x00" in item for item, _depth in _walk(value))


def checked_json(value: Any, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """``value`` (parsed JSON) if it nests at most ``max_depth`` deep and holds no NUL; ``BadJSON`` otherwise."""
    for item, depth in _walk(value):
        if depth > max_depth:
            raise BadJSON(f"JSON nested deeper than {max_depth} levels is not accepted")
        if isinstance(item, str) and "\x00" in item:
            raise BadJSON("NUL characters (\\u0000) are not allowed")
    return value


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not valid JSON")


def parse_json(text: str | bytes, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Parse request JSON: ``BadJSON`` for malformed JSON, JSON nested too deep, or NUL characters."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except RecursionError:
        raise BadJSON(f"JSON nested deeper than {max_depth} levels is not accepted") from None
    except ValueError as exc:
        raise BadJSON(f"malformed JSON: {exc}") from None
    return checked_json(value, max_depth=max_depth)
