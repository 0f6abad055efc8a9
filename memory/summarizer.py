"""The summarizer call, bounded by a real deadline (docs/memory.md#the-bound-and-what-happens-on-failure: ``SKEIN_SUMMARY_TIMEOUT_S``).

The bound covers the whole summarization, retries included: the call gets the deadline, sends no
request after it and gives up an attempt in flight at it. The call runs in a thread of its own,
so the turn goes on at the deadline whatever the provider does, and a provider that hangs holds
only its own thread: it never delays another workflow's summaries (no shared pool to fill).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from engine.interfaces import LLMResult


class SummaryTimeout(Exception):
    pass


def summarize(call: Callable[[list[dict], float], LLMResult], request: list[dict], *, timeout: float) -> LLMResult:
    """``call(request, deadline)``, given up after ``timeout`` seconds whatever it is doing."""
    deadline = time.monotonic() + timeout
    outcome: dict = {}
    done = threading.Event()

    def work() -> None:
        try:
            outcome["result"] = call(request, deadline)
        except BaseException as exc:  # handed to the waiting turn below
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=work, name="skein-summarizer", daemon=True).start()
    if not done.wait(max(0.0, deadline - time.monotonic())):
        raise SummaryTimeout(f"the summarizer did not answer within {timeout:g}s")
    if "error" in outcome:
        if time.monotonic() >= deadline:  # the call gave up at the bound itself: say which bound
            raise SummaryTimeout(f"the summarizer did not answer within {timeout:g}s") from outcome["error"]
        raise outcome["error"]
    return outcome["result"]
