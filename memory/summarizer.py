"""The summarizer call: one request with the previous summary and the messages to fold in,
bounded by a real deadline (the call runs in a worker thread that is abandoned at the bound)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable

from workflows.engine.services import LLMResult

# Abandoned calls finish (or hit their own timeout) in the background; a small pool caps them.
_pool = concurrent.futures.ThreadPoolExecutor(max_workers=8, thread_name_prefix="skein-summarizer")


class SummaryTimeout(Exception):
    pass


def summarize(call: Callable[[list[dict], float], LLMResult], request: list[dict], *, timeout: float) -> LLMResult:
    """Run ``call(request, timeout)`` and give up after ``timeout`` seconds, whatever it is doing."""
    future = _pool.submit(call, request, timeout)
    try:
        return future.result(timeout=timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise SummaryTimeout(f"the summarizer did not answer within {timeout:g}s") from None
