"""1. Memory context cost per turn.

What a turn pays to build a memory node's context -- ``MemoryRuntime(...).context(binding)``, as the
executor calls it, fresh per turn, against PostgreSQL -- for ``memory.window`` (by tokens) and
``memory.summary`` (steady state: a stored summary covers all but the newest few messages, so no
summarization is due), over histories of 100 ... 100,000 messages.

Baseline: LangChain's ``trim_messages`` (strategy "last", the newest messages within the same token
budget) with a tiktoken counter, over the same messages, already in memory as LangChain messages
(loading them is not timed: the baseline's most favourable case). The counter counts exactly as
Skein does (cl100k_base tokens of the content + 4 per message), so both keep the same messages,
which is checked.

Skein calls and baseline calls are interleaved, round by round, for every history size.
"""

from __future__ import annotations

import random
import time

from .common import Result, Row, log, summarize

NAME = "memory"
TITLE = "Memory context cost per turn"

FULL_SIZES = (100, 1_000, 10_000, 100_000)
QUICK_SIZES = (100, 1_000)
MAX_TOKENS = 2_000  # the window's (and the baseline's) token budget
TOKENIZER = "cl100k"  # the name Skein stores the counts of an unknown model's messages under
PENDING = 10  # steady-state summary: messages the summary does not cover yet (< max_messages 20)

WORDS = (
    "the a of to and in is it you that for on with as are this be at have or from not by but what all "
    "when can there use an each which she do how their if will up other about out many then them these "
    "so some her would make like him into time has look two more write go see number no way could people "
    "my than first water been call who oil its now find long down day did get come made may part memory "
    "workflow summary token window model thread reply question answer graph node context budget history"
).split()


def message_texts(count: int, seed: int = 8) -> list[tuple[str, str]]:
    """``count`` distinct chat messages of 5..90 words, user and assistant alternating."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(5, 90)))
        out.append(("user" if i % 2 == 0 else "assistant", f"{words} (message {i + 1})"))
    return out


def _seed_histories(sizes) -> dict:
    """One global history per size (``thread:<size>``) in one workflow, with a steady-state summary."""
    from django.contrib.auth import get_user_model
    from django.db import connection

    from memory.models import History, HistoryMessage, Summary
    from memory.tokens import count_message
    from workflows.models import Workflow

    owner, _ = get_user_model().objects.get_or_create(username="bench-memory")
    workflow = Workflow.objects.create(owner=owner, name="bench memory", graph={"nodes": [], "edges": []})
    biggest = max(sizes)
    started = time.monotonic()
    texts = message_texts(biggest)
    counts = [count_message(role, content) for role, content in texts]
    log(f"memory: counted tokens of {biggest:,} messages in {time.monotonic() - started:.1f}s")
    histories = {}
    for size in sizes:
        started = time.monotonic()
        history = History.objects.create(workflow=workflow, kind="global", name="", key=f"thread:{size}", last_seq=size)
        batch = []
        for i in range(size):
            role, content = texts[i]
            batch.append(HistoryMessage(history=history, seq=i + 1, role=role, content=content, token_counts={TOKENIZER: counts[i]}))
            if len(batch) >= 5_000:
                HistoryMessage.objects.bulk_create(batch)
                batch = []
        if batch:
            HistoryMessage.objects.bulk_create(batch)
        Summary.objects.create(
            history=history, memory_node="mem", text=" ".join(WORDS[:150]), covers_through=size - PENDING, token_count=200
        )
        histories[size] = history
        log(f"memory: stored a history of {size:,} messages in {time.monotonic() - started:.1f}s")
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE memory_historymessage")
            cursor.execute("ANALYZE memory_history")
            cursor.execute("ANALYZE memory_summary")
    return {"workflow_id": workflow.pk, "histories": histories, "texts": texts}


def _bindings():
    """The window and summary memories as the executor binds them: each node type's spec."""
    from engine.interfaces import MemoryBinding, ModelRef
    from engine.registry import get_node_type

    agent = ModelRef(model="agent-model", provider=None)  # an unknown model: cl100k, like the baseline

    def bound(memory_type: str, params: dict) -> MemoryBinding:
        node_type = get_node_type(memory_type)
        spec = node_type.memory_spec("mem", node_type.Params.model_validate(params), lambda port: [])
        return MemoryBinding(spec=spec, consumer_node="agent", consumer_model=agent)

    return bound("memory.window", {"max_tokens": MAX_TOKENS}), bound("memory.summary", {"max_messages": 20, "keep_last": 6})


def _skein_context(workflow_id: int, thread_id: int, binding) -> list[dict]:
    """One turn's memory context, as ``TurnRuntime`` builds it (a fresh ``MemoryRuntime`` per turn)."""
    from memory.runtime import MemoryRuntime
    from memory.tokens import tokenizer_for

    def no_model(*args, **kwargs):
        raise AssertionError("steady state: no summarization may be due")

    runtime = MemoryRuntime(
        workflow_id=workflow_id,
        run_id=1,
        thread_id=thread_id,
        bind_model=no_model,
        tokenizer_of=lambda ref: tokenizer_for(ref.model if ref else None),
        warn=lambda *a: None,
        notify=lambda *a: None,
    )
    return runtime.context(binding).messages


def _baseline(texts: list[tuple[str, str]]):
    """LangChain messages for the history, and trim_messages with a tiktoken counter."""
    from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, trim_messages

    from memory.tokens import _point_tiktoken_at_bundled_encodings

    _point_tiktoken_at_bundled_encodings()
    import tiktoken

    encoding = tiktoken.get_encoding("cl100k_base")  # the encoding Skein counts this model's tokens with

    def tiktoken_counter(messages: list[BaseMessage]) -> int:
        # LangChain's documented pattern (a counter over a list of messages), counting like Skein.
        return sum(4 + len(encoding.encode(m.content, disallowed_special=())) for m in messages)

    messages = [HumanMessage(content) if role == "user" else AIMessage(content) for role, content in texts]

    def trim() -> list:
        return trim_messages(messages, max_tokens=MAX_TOKENS, strategy="last", token_counter=tiktoken_counter)

    return trim


def run(quick: bool) -> Result:
    from .common import setup_django

    setup_django()
    sizes = QUICK_SIZES if quick else FULL_SIZES
    skein_target = 20 if quick else 200
    base_target = 3 if quick else 15
    budget = 3.0 if quick else 60.0  # seconds per size, at most (at least one baseline call)

    data = _seed_histories(sizes)
    window, summary = _bindings()
    result = Result(NAME, TITLE)
    figures = {}
    for size in sizes:
        texts = data["texts"][:size]
        trim = _baseline(texts)
        # Warm-up and agreement: both keep the same newest messages.
        kept_skein = _skein_context(data["workflow_id"], size, window)
        kept_base = trim()
        if [m["content"] for m in kept_skein] != [m.content for m in kept_base]:
            raise AssertionError(f"window and trim_messages disagree at {size}: {len(kept_skein)} vs {len(kept_base)} messages")
        summary_context = _skein_context(data["workflow_id"], size, summary)
        if len(summary_context) != PENDING + 1:
            raise AssertionError(f"summary context at {size}: {len(summary_context)} messages, expected {PENDING + 1}")

        times = {"window": [], "summary": [], "baseline": []}
        per_round = max(1, skein_target // base_target)
        started = time.monotonic()
        while True:
            if len(times["baseline"]) < base_target:
                t0 = time.perf_counter()
                trim()
                times["baseline"].append(time.perf_counter() - t0)
            for _ in range(per_round):
                for key, binding in (("window", window), ("summary", summary)):
                    t0 = time.perf_counter()
                    _skein_context(data["workflow_id"], size, binding)
                    times[key].append(time.perf_counter() - t0)
            enough = len(times["baseline"]) >= base_target and len(times["window"]) >= skein_target
            if enough or (time.monotonic() - started > budget and len(times["window"]) >= 10):
                break
        stats = {key: summarize([t * 1000 for t in values]) for key, values in times.items()}
        figures[size] = stats
        log(
            f"memory {size:>7,}: window p50 {stats['window']['p50']:.3f} ms, summary p50 {stats['summary']['p50']:.3f} ms, "
            f"trim_messages p50 {stats['baseline']['p50']:.1f} ms (n={stats['baseline']['n']}), kept {len(kept_skein)} msgs"
        )

    goal_size = 10_000 if 10_000 in sizes else max(sizes)
    for strategy in ("window", "summary"):
        for size in sizes:
            skein_ms = figures[size][strategy]["p50"]
            base_ms = figures[size]["baseline"]["p50"]
            ratio = base_ms / skein_ms
            row = Row(f"memory.{strategy} context, {size:,} msgs (p50)", skein_ms, base_ms, "ms", ratio, "baseline / Skein")
            if size == goal_size:
                row.goal, row.met = "≥ 50× faster than trim_messages at 10k", ratio >= 50
            result.rows.append(row)
        low, high = figures[min(sizes)][strategy]["p50"], figures[max(sizes)][strategy]["p50"]
        growth = high / low
        result.rows.append(
            Row(
                f"memory.{strategy} flatness, {min(sizes):,} → {max(sizes):,} msgs",
                f"{growth:.2f}×",
                f"{figures[max(sizes)]['baseline']['p50'] / figures[min(sizes)]['baseline']['p50']:.0f}×",
                "",
                None,
                "",
                "Skein ≤ 2× from 100 to 100k",
                growth <= 2.0,
                note="growth of p50 cost (largest / smallest history); baseline column: trim_messages' growth",
            )
        )
    result.details = {
        "database": "postgresql",
        "max_tokens": MAX_TOKENS,
        "summary": {"max_messages": 20, "keep_last": 6, "pending_messages": PENDING},
        "figures_ms": {str(k): v for k, v in figures.items()},
    }
    return result
