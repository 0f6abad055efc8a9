"""Matching a test author's regular expression against a reply, in linear time.

A pattern comes from a person and a reply from a model: a catastrophic pattern (``(a|aa)+$``)
must not hold a worker. Patterns run in RE2, like route regexes (workflows/nodes/router.py):
matching time is linear in the reply, whatever the pattern, and a pattern RE2 cannot run is
refused when the test is saved. Every match of a test author's pattern goes through here.
"""

from __future__ import annotations

from functools import lru_cache

import re2

MAX_PATTERN_CHARS = 1000

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False
_OPTIONS.case_sensitive = False  # reply_matches ignores case (docs/conversation-tests.md#checks)
_OPTIONS.max_mem = 8 << 20  # bytes for one compiled pattern: huge repetitions fail to compile


@lru_cache(maxsize=512)
def _compiled(pattern: str):
    return re2.compile(pattern, _OPTIONS)


def pattern_error(pattern: str) -> str | None:
    """Why ``pattern`` cannot be used, or None."""
    if len(pattern) > MAX_PATTERN_CHARS:
        return f"a pattern has at most {MAX_PATTERN_CHARS} characters"
    try:
        _compiled(pattern)
    except re2.error as exc:
        reason = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        return (
            f"invalid regular expression: {reason} (patterns match in linear time with RE2: no look-ahead/look-behind or back-references)"
        )
    return None


def pattern_search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` (case-insensitive) occurs in ``text``."""
    return _compiled(pattern).search(text) is not None
