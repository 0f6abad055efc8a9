"""Matching a test author's regular expression against a reply, with a time bound.

A pattern comes from a person and a reply from a model: a catastrophic pattern (``(a|aa)+$``)
must not hold a worker. The ``regex`` engine stops a search at a deadline, which ends as an error
on the check rather than a frozen process. Every match of a user's pattern goes through here.
"""

from __future__ import annotations

from functools import lru_cache

import regex
from django.conf import settings

MAX_PATTERN_CHARS = 1000


class PatternTimeout(Exception):
    pass


@lru_cache(maxsize=512)
def _compiled(pattern: str):
    return regex.compile(pattern, flags=regex.IGNORECASE)


def pattern_error(pattern: str) -> str | None:
    """Why ``pattern`` cannot be used, or None."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"a pattern has at most {MAX_PATTERN_CHARS} characters"
    try:
        _compiled(pattern)
    except (regex.error, OverflowError, RecursionError) as exc:
        return f"invalid regular expression: {exc}"
    return None


def pattern_search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` (case-insensitive) occurs in ``text``; ``PatternTimeout`` past the bound."""
    timeout = float(settings.SKEIN_TEST_REGEX_TIMEOUT_S)
    try:
        return _compiled(pattern).search(text, timeout=timeout) is not None
    except TimeoutError:
        raise PatternTimeout(f"the pattern took longer than {timeout:g} s on this reply; simplify it") from None
