"""Text as the database can keep it: PostgreSQL refuses NUL in text and JSON, so it becomes U+FFFD.

Used where text comes from models or nodes (replies, step outputs); input from people is refused
with a 400 instead (``workflows.api.parsers``)."""

from __future__ import annotations

from typing import Any

REPLACEMENT = "\ufffd"


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


def contains_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(contains_nul(k) or contains_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(contains_nul(v) for v in value)
    return False
