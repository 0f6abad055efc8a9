"""2. Turn overhead.

A chat turn through the HTTP API (``POST /api/workflows/{id}/chat/``, which answers once the turn
finished) with the fake model answering at once, against a bare ``litellm.completion(stream=True)``
from this process to the same fake server with the same messages (the ones Skein's turn sent).
Turns and bare calls alternate (which goes first alternates too); the overhead is the difference of
each pair, summarized as p50 / p99. Embedded mode (daphne, eager Celery, SQLite) and full mode
(daphne + Celery worker + Redis + PostgreSQL).

The workflow is trigger.chat -> llm -> output with a ``memory.window`` (by tokens) on the llm, and
conversations of 25 turns (a new thread every 25 turns, so thread creation is part of the mix).
"""

from __future__ import annotations

import time

from . import stacks
from .bareclient import bare_stream
from .common import (
    Cleanup,
    Result,
    Row,
    alternating_pairs,
    api_client,
    api_token,
    check,
    create_chatbot,
    log,
    ms,
    run_timeline,
    start_fake_llm,
    summarize,
)

NAME = "overhead"
TITLE = "Turn overhead"
TURNS_PER_THREAD = 25
MEMORY = {"type": "memory.window", "max_tokens": 2000, "max_messages": None}
GOALS_MS = {"embedded": 15.0, "full": 30.0}


def bare_call(fake, messages: list[dict]) -> str:
    """A bare litellm call (``bareclient.bare_stream``), read to its end."""
    response = bare_stream(fake.base_url, messages)
    parts = []
    for chunk in response:
        choices = getattr(chunk, "choices", None) or []
        if choices and choices[0].delta and choices[0].delta.content:
            parts.append(choices[0].delta.content)
    return "".join(parts)


def measure(stack: stacks.Stack, fake, *, turns: int, warmup: int, profile=None) -> dict:
    """Alternating turns and bare calls; returns the raw times (seconds) and their differences."""
    token = api_token(stack.base)
    client = api_client(stack.base, token)
    Cleanup.push("http client", client.close)
    workflow = create_chatbot(client, fake.base_url, memory=MEMORY, name=f"overhead {stack.mode}")
    url = f"/api/workflows/{workflow['id']}/chat/"
    state = {"thread": None, "count": 0}
    samples = []  # (run, wall sent, wall answered) of measured turns

    def turn() -> tuple[float, list[dict]]:
        index = state["count"]
        state["count"] += 1
        if index % TURNS_PER_THREAD == 0:
            state["thread"] = None
        message = f"turn {index} of the overhead benchmark"
        sent_at = time.time()
        started = time.perf_counter()
        response = client.post(url, json={"message": message, "thread": state["thread"]})
        elapsed = time.perf_counter() - started
        answered_at = time.time()
        body = check(response)
        samples.append((body["run"], sent_at, answered_at))
        if body.get("reply") != f"echo: {message}":
            raise AssertionError(f"unexpected answer: {body}")
        state["thread"] = body["thread"]
        sent = next(r for r in reversed(fake.requests) if r.last_user == message)
        return elapsed, sent.messages

    def bare(messages) -> float:
        started = time.perf_counter()
        reply = bare_call(fake, messages)
        elapsed = time.perf_counter() - started
        if not reply.startswith("echo: "):
            raise AssertionError(f"unexpected bare answer: {reply!r}")
        return elapsed

    pairs = alternating_pairs(turn, bare, pairs=turns, warmup=warmup, profile=profile)
    del samples[:warmup]  # the warm-up turns'
    turn_times = [t for t, _ in pairs]
    bare_times = [b for _, b in pairs]
    diffs = [t - b for t, b in pairs]
    fake.requests.clear()
    timeline = run_timeline(client, samples)
    return {"turn": turn_times, "bare": bare_times, "diff": diffs}, timeline


def run(quick: bool) -> Result:
    turns = 20 if quick else 300
    warmup = 3 if quick else 20
    result = Result(NAME, TITLE)
    fake = start_fake_llm()
    Cleanup.push("fake model server", fake.stop)
    import litellm  # noqa: F401  (the bare client's import is not part of any call)

    figures, timelines = {}, {}
    for mode in ("embedded", "full"):
        with Cleanup.scope():
            stack, profile = stacks.latency_stack(mode, profile_as="overhead")
            raw, timeline = measure(stack, fake, turns=turns, warmup=warmup, profile=profile)
        stats = {key: summarize([ms(v) for v in values]) for key, values in raw.items()}
        figures[mode] = stats
        timelines[mode] = timeline
        log(f"overhead {mode}: turn timeline p50: " + ", ".join(f"{k.strip()} {v['p50']:.1f} ms" for k, v in timeline.items()))
        log(
            f"overhead {mode}: turn p50 {stats['turn']['p50']:.1f} ms, bare p50 {stats['bare']['p50']:.1f} ms, "
            f"difference p50 {stats['diff']['p50']:.1f} ms, p99 {stats['diff']['p99']:.1f} ms (n={turns})"
        )
        goal = GOALS_MS[mode]
        result.rows.append(
            Row(
                f"turn overhead, {mode} (p50 of turn − bare call)",
                stats["diff"]["p50"],
                None,
                "ms",
                None,
                "",
                f"p50 ≤ {goal:g} ms",
                stats["diff"]["p50"] <= goal,
                note=f"turn p50 {stats['turn']['p50']:.1f} ms vs bare litellm call p50 {stats['bare']['p50']:.1f} ms; n={turns}",
            )
        )
        result.rows[-1].baseline = "—"
        result.rows.append(
            Row(
                f"turn latency, {mode} (p50)",
                stats["turn"]["p50"],
                stats["bare"]["p50"],
                "ms",
                stats["turn"]["p50"] / stats["bare"]["p50"],
                "Skein / bare",
            )
        )
        result.rows.append(
            Row(
                f"turn overhead, {mode} (p99 of turn − bare call)",
                stats["diff"]["p99"],
                None,
                "ms",
                None,
                "",
            )
        )
        result.rows[-1].baseline = "—"
        result.rows.append(
            Row(
                f"turn latency, {mode} (p99)",
                stats["turn"]["p99"],
                stats["bare"]["p99"],
                "ms",
                stats["turn"]["p99"] / stats["bare"]["p99"],
                "Skein / bare",
            )
        )
    result.details = {
        "turns_per_mode": turns,
        "warmup_turns": warmup,
        "turns_per_thread": TURNS_PER_THREAD,
        "memory": MEMORY,
        "full_mode_worker": "1 process, --pool threads --concurrency 8",
        "figures_ms": figures,
        "timeline_ms": timelines,
    }
    return result
