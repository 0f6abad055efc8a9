"""6. Memory quality: does a bot remember what the participant said?

Generated conversations (``bench/memory_quality_data.py``: facts stated, some changed later,
questions, small talk and long pasted text in between, over several sessions) of 40, 200 and 1,000
messages are replayed through Skein's own chat turns: ``runs.chat_start`` on a workflow
trigger.chat → llm → output with the configuration's memory node attached, every turn executed by
the real executor and memory runtime (summaries made by a real model, stored, extended), only the
consuming model's reply scripted (``TurnRuntime.call_model`` answers the ``assistant`` node with
the conversation's scripted reply and keeps what it was sent). At the last turn, what the consuming
model was sent is scored without a model: each current fact's value present? an old value shown
without the new one (stale)? Plus context tokens against the buffer's, and the summarizer's calls,
tokens, seconds per 100 messages and failures (each one a turn that sent the uncompressed history).

Baseline: LangChain's ``SummarizationMiddleware`` (``langchain`` 1.x, its default prompt) with the
same model and thresholds (summarize at 20 messages, keep the newest 6), run on the same turns.

Configurations are the list ``CONFIGS``: each names a memory node (type and params, as the editor
saves them), whether a summarizer model hangs on its llm port, and how the conversation is laid
over threads (``one thread``, or ``threads``: each session a thread of its own, for memory that
outlives a thread). Add one there and it is replayed, scored and plotted like the others.

``SKEIN_BENCH_MODEL`` (a litellm model string, its key in the environment) adds real answers: each
fact asked as a question of that model with the final context, scored by containment of the value;
it also becomes the external summarizer. Off by default.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field

from .common import BENCH_DIR, Result, Row, log
from .memory_quality_data import CLOSING, Conversation, answer_correct, generate, score

NAME = "memory_quality"
TITLE = "Memory quality (fact retention)"

FULL_SIZES = (40, 200, 1000)
QUICK_SIZES = (24,)
SEED = 16
SYSTEM_PROMPT = "You are a helpful assistant. Use what the user told you earlier."
LOCAL = "smollm2"
PLOT = "memory_quality.png"
BEFORE = "memory_quality_before.json"  # the figures of the summarization before the facts section
TARGET_SIZE = 200


@dataclass(frozen=True)
class Config:
    """One way of remembering, replayed on every conversation."""

    name: str
    memory: dict | None  # the memory node's data: {"type": ..., params...}; None: no memory
    summarizer: bool = False  # an llm.model node on the memory's llm port (llm_source external)
    layout: str = "one thread"  # "one thread" | "threads" (each session a thread of its own)
    runner: str = "skein"  # "skein": Skein's chat turns; "langchain": the baseline
    uses_model: bool = False  # a model summarizes (for the quick run's budget and the report)
    extra: dict = field(default_factory=dict)  # for runners that need more (participant, ...)
    # memory.facts on the consuming node as well ({params}; a model extracts after every turn)
    facts: dict | None = None
    max_messages: int | None = None  # replayed on conversations up to this size only (a model call per turn)


CONFIGS: list[Config] = [
    Config("buffer", {"type": "memory.buffer"}),
    Config("window 20 msgs", {"type": "memory.window", "max_messages": 20}),
    Config("window 1000 tokens", {"type": "memory.window", "max_tokens": 1000}),
    Config("summary 20/6, bundled model", {"type": "memory.summary", "max_messages": 20, "keep_last": 6}, uses_model=True),
    Config(
        "summary 20/6, external summarizer",
        {"type": "memory.summary", "max_messages": 20, "keep_last": 6, "llm_source": "external"},
        summarizer=True,
        uses_model=True,
    ),
    Config("LangChain SummarizationMiddleware 20/6", None, runner="langchain", uses_model=True),
    # Memory that outlives a thread (issue 21): each session is a thread of its own, so facts told
    # in the first session are asked for in the last. Thread-keyed memory starts empty in every
    # thread; participant-keyed memory and memory.facts follow the participant.
    Config(
        "summary 20/6, thread-keyed, sessions as threads",
        {"type": "memory.summary", "max_messages": 20, "keep_last": 6},
        layout="threads",
        uses_model=True,
    ),
    Config(
        "summary 20/6, participant-keyed, sessions as threads",
        {"type": "memory.summary", "max_messages": 20, "keep_last": 6, "key": "participant"},
        layout="threads",
        uses_model=True,
        extra={"participant": "bench-participant"},
    ),
    Config(
        "facts + window 6, sessions as threads",
        {"type": "memory.window", "max_messages": 6},
        layout="threads",
        uses_model=True,
        extra={"participant": "bench-participant"},
        facts={},
        max_messages=200,
    ),
]
BUFFER = "buffer"
OURS = "summary 20/6, bundled model"
PEER = "LangChain SummarizationMiddleware 20/6"


def _bench_model() -> str | None:
    return os.environ.get("SKEIN_BENCH_MODEL") or None


# --- Skein: the conversation as chat turns ------------------------------------------------------
class _Script:
    """The consuming model's scripted replies, and what it was sent at each turn."""

    reply: str = ""
    sent: list[list[dict]] = []


def _patch_consumer():
    """``TurnRuntime.call_model`` for the consuming node: record, answer from the script. The
    summarizer does not go through ``call_model`` (``bind_model``): it calls the real model."""
    from engine.interfaces import LLMResult
    from runs.runtime import TurnRuntime

    original = TurnRuntime.call_model

    def call_model(self, node_id, ref, messages):
        if node_id != "assistant":
            return original(self, node_id, ref, messages)
        step = self._steps.get(node_id)
        if step is not None:
            step.messages = [dict(m) for m in messages]
        _Script.sent.append([dict(m) for m in messages])
        return LLMResult(text=_Script.reply, model=ref.model)

    TurnRuntime.call_model = call_model
    return lambda: setattr(TurnRuntime, "call_model", original)


def _graph(config: Config, provider_id: int) -> dict:
    from demo.seed import chatbot_graph

    ref = {"model": LOCAL, "provider": provider_id}
    summarizer = None
    if config.summarizer:
        summarizer = {"model": _bench_model(), "provider": None} if _bench_model() else dict(ref)
        summarizer["temperature"] = 0.2
    graph = chatbot_graph(ref, SYSTEM_PROMPT, memory=dict(config.memory) if config.memory else None, summarizer=summarizer)
    if config.facts is not None:  # memory.facts beside the history memory, extracting with the consuming node's model
        from engine.graph import edge_json, node_json

        graph["nodes"].append(node_json("facts", "memory.facts", 300, 400, **config.facts))
        graph["edges"].append(edge_json("facts", "assistant", "memory", "memory"))
    return graph


def _replay_skein(config: Config, conversation: Conversation, owner, provider) -> dict:
    from memory.models import FactExtraction, History, Summarization
    from participants import services as participants
    from runs import services as runs
    from runs.models import Run
    from workflows import services

    workflow = services.workflow_create(
        owner=owner, name=f"bench {config.name} {len(conversation.messages)}", graph=_graph(config, provider.pk)
    )
    _Script.sent = []
    participant = None
    if config.extra.get("participant"):
        participant = participants.participant_get_or_create(owner_id=owner.pk, external_id=config.extra["participant"])
    threads: dict[int, object] = {}
    warnings = failed_runs = 0
    started = time.monotonic()
    for session in range(conversation.sessions):
        for user, reply in conversation.turns(session):
            key = session if config.layout == "threads" else 0
            _Script.reply = reply
            run = runs.chat_start(workflow=workflow, message=user, thread=threads.get(key), participant=participant)
            run = Run.objects.get(pk=run.pk)
            threads[key] = run.thread
            if run.status != Run.Status.SUCCEEDED:
                failed_runs += 1
                log(f"memory_quality: {config.name}: run {run.pk} {run.status}: {run.error[:200]}")
            warnings += len(run.warnings or [])
    seconds = time.monotonic() - started
    rows = Summarization.objects.filter(history__in=History.objects.filter(workflow=workflow))
    # A memory's own model calls: summarizations, and memory.facts' extractions after each turn.
    calls = list(rows) + list(FactExtraction.objects.filter(workflow=workflow))
    stats = {
        "calls": len(calls),
        "failed": sum(1 for r in calls if r.status == "failed"),
        "prompt_tokens": sum(r.prompt_tokens for r in calls),
        "completion_tokens": sum(r.completion_tokens for r in calls),
        "seconds": sum(r.duration_ms for r in calls) / 1000,
    }
    summary = ""
    last = rows.filter(status="ok").order_by("-id").first()
    if last is not None:
        from memory.models import Summary

        current = Summary.objects.filter(history=last.history).first()
        summary = current.text if current else ""
    return {
        "sent": _Script.sent,
        "summarizer": stats,
        "warnings": warnings,
        "failed_runs": failed_runs,
        "replay_seconds": seconds,
        "summary": summary,
    }


# --- LangChain's summarization middleware, on the same turns ----------------------------------
def _replay_langchain(config: Config, conversation: Conversation) -> dict:
    from .memory_quality_langchain import replay

    return replay(conversation, system_prompt=SYSTEM_PROMPT, trigger_messages=20, keep_messages=6)


# --- scoring and the report ---------------------------------------------------------------------
def _tokenizer():
    from memory.tokens import tokenizer_for

    return tokenizer_for(LOCAL, "local")


def _context_tokens(messages: list[dict]) -> int:
    tokenizer = _tokenizer()
    return sum(tokenizer.count_message(m["role"], m["content"]) for m in messages)


def _memory_part(sent: list[dict]) -> list[dict]:
    """What memory contributed to the final turn: everything between the system prompt and the input."""
    assert sent and sent[-1]["content"] == CLOSING, "the last turn's input is the closing line"
    return sent[1:-1] if sent[0]["role"] == "system" and sent[0]["content"] == SYSTEM_PROMPT else sent[:-1]


def _real_answers(final: list[dict], conversation: Conversation) -> dict | None:
    model = _bench_model()
    if not model:
        return None
    import litellm

    correct = 0
    for fact in conversation.facts:
        messages = final[:-1] + [{"role": "user", "content": fact.question + " Answer in a few words."}]
        try:
            answer = litellm.completion(model=model, messages=messages, max_tokens=40, temperature=0).choices[0].message.content or ""
        except Exception as exc:
            log(f"memory_quality: {model} failed: {exc}")
            answer = ""
        correct += answer_correct(answer, fact)
    return {
        "model": model,
        "correct": correct,
        "facts": len(conversation.facts),
        "pct": round(100.0 * correct / len(conversation.facts), 1),
    }


def evaluate(config: Config, conversation: Conversation, replayed: dict) -> dict:
    final = replayed["sent"][-1]
    memory = _memory_part(final)
    result = score(memory, conversation.facts)
    n = len(conversation.messages)
    s = replayed["summarizer"]
    per100 = 100.0 / n
    return {
        "config": config.name,
        "messages": n,
        "facts": result.facts,
        "changed": result.changed,
        "retention_pct": round(result.retention, 1),
        "stale_pct": round(result.stale_pct, 1),
        "missing": result.missing,
        "stale": result.stale_slots,
        "context_tokens": _context_tokens(final),
        "memory_tokens": _context_tokens(memory),
        "mean_context_tokens": round(sum(_context_tokens(m) for m in replayed["sent"]) / len(replayed["sent"]), 1),
        "summarizer_calls_per_100": round(s["calls"] * per100, 2),
        "summarizer_tokens_per_100": round((s["prompt_tokens"] + s["completion_tokens"]) * per100, 1),
        "summarizer_seconds_per_100": round(s["seconds"] * per100, 2),
        "summarizer_calls": s["calls"],
        "failures": s["failed"],
        "warnings": replayed.get("warnings", 0),
        "failed_runs": replayed.get("failed_runs", 0),
        "replay_seconds": round(replayed["replay_seconds"], 1),
        "summary": replayed.get("summary", "")[:4000],
        "real_answers": _real_answers(final, conversation),
    }


def _table(figures: list[dict], buffer_tokens: dict[int, int]) -> str:
    lines = [
        "| configuration | msgs | retention | stale | context tokens (last turn) | vs buffer | summarizer calls /100 msgs | "
        "summarizer tokens /100 msgs | summarizer s /100 msgs | failures (fallbacks) |" + (" real answers |" if _bench_model() else ""),
        "|---|---|---|---|---|---|---|---|---|---|" + ("---|" if _bench_model() else ""),
    ]
    for f in figures:
        share = 100.0 * f["context_tokens"] / buffer_tokens[f["messages"]] if buffer_tokens.get(f["messages"]) else 0
        real = f" {f['real_answers']['pct']:.0f}% |" if f.get("real_answers") else (" — |" if _bench_model() else "")
        lines.append(
            f"| {f['config']} | {f['messages']:,} | {f['retention_pct']:.0f}% ({f['facts'] - len(f['missing'])}/{f['facts']}) | "
            f"{f['stale_pct']:.0f}% ({len(f['stale'])}/{f['changed']}) | {f['context_tokens']:,} | {share:.0f}% | "
            f"{f['summarizer_calls_per_100']:.1f} | {f['summarizer_tokens_per_100']:,.0f} | {f['summarizer_seconds_per_100']:.1f} | "
            f"{f['failures']} |{real}"
        )
    return "\n".join(lines)


def _plot(figures: list[dict], path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 5), dpi=110)
    markers = {40: "o", 200: "s", 1000: "^"}
    for i, config in enumerate(dict.fromkeys(f["config"] for f in figures)):
        points = sorted(
            ((f["context_tokens"], f["retention_pct"], f["messages"]) for f in figures if f["config"] == config), key=lambda p: p[2]
        )
        color = f"C{i}"
        ax.plot([p[0] for p in points], [p[1] for p in points], color=color, alpha=0.4)
        for x, y, n in points:
            ax.scatter([x], [y], color=color, marker=markers.get(n, "o"), s=40)
        ax.scatter([], [], color=color, label=config)
    for n, marker in markers.items():
        if any(f["messages"] == n for f in figures):
            ax.scatter([], [], color="grey", marker=marker, label=f"{n:,} messages")
    ax.set_xscale("log")
    ax.set_xlabel("context tokens sent at the last turn (log)")
    ax.set_ylabel("current facts retained (%)")
    ax.set_ylim(-5, 105)
    ax.set_title("Fact retention against context size")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def run(quick: bool) -> Result:
    from django.contrib.auth import get_user_model

    from demo.seed import local_provider_get_or_create

    from .common import setup_django

    setup_django()
    owner, _ = get_user_model().objects.get_or_create(username="bench-memory-quality")
    provider, _ = local_provider_get_or_create(owner=owner)
    sizes = QUICK_SIZES if quick else tuple(int(s) for s in os.environ.get("SKEIN_BENCH_MEMORY_SIZES", "").split(",") if s) or FULL_SIZES
    only = {s.strip() for s in os.environ.get("SKEIN_BENCH_MEMORY_CONFIGS", "").split(";") if s.strip()}
    configs = [c for c in CONFIGS if not only or c.name in only or c.name == BUFFER]
    restore = _patch_consumer()
    figures = []
    try:
        for size in sizes:
            conversation = generate(size, SEED)
            for config in configs:
                if config.max_messages is not None and size > config.max_messages:
                    continue
                started = time.monotonic()
                replayed = (
                    _replay_langchain(config, conversation)
                    if config.runner == "langchain"
                    else _replay_skein(config, conversation, owner, provider)
                )
                figure = evaluate(config, conversation, replayed)
                figures.append(figure)
                log(
                    f"memory_quality {size:>5}: {config.name}: retention {figure['retention_pct']:.0f}%, stale "
                    f"{figure['stale_pct']:.0f}%, {figure['context_tokens']} tokens, {figure['summarizer_calls']} summaries "
                    f"({figure['failures']} failed) in {time.monotonic() - started:.1f}s"
                )
    finally:
        restore()

    buffer_tokens = {f["messages"]: f["context_tokens"] for f in figures if f["config"] == BUFFER}
    plot_name = PLOT.replace(".png", "-quick.png") if quick else PLOT
    _plot(figures, BENCH_DIR / plot_name)
    result = Result(NAME, TITLE)
    by = {(f["config"], f["messages"]): f for f in figures}
    target = TARGET_SIZE if TARGET_SIZE in sizes else max(sizes)
    ours, peer, buf = by.get((OURS, target)), by.get((PEER, target)), buffer_tokens.get(target)
    if ours and buf:
        share = 100.0 * ours["context_tokens"] / buf
        result.rows.append(
            Row(
                f"summary memory retention, {target} msgs, bundled model",
                ours["retention_pct"],
                peer["retention_pct"] if peer else None,
                "%",
                None,
                "",
                "≥ 80% of current facts",
                ours["retention_pct"] >= 80 if not quick else None,
                note="baseline column: LangChain's SummarizationMiddleware, same model and thresholds",
            )
        )
        result.rows.append(
            Row(
                f"summary memory context, {target} msgs (share of the buffer's tokens)",
                round(share, 1),
                round(100.0 * peer["context_tokens"] / buf, 1) if peer else None,
                "%",
                None,
                "",
                "≤ 20% of the buffer's tokens",
                share <= 20 if not quick else None,
            )
        )
        if peer:
            ahead = ours["retention_pct"] > peer["retention_pct"] and ours["context_tokens"] <= peer["context_tokens"]
            result.rows.append(
                Row(
                    f"summary memory vs LangChain, {target} msgs (retention points)",
                    round(ours["retention_pct"] - peer["retention_pct"], 1),
                    None,
                    "pts",
                    None,
                    "",
                    "ahead at equal or fewer tokens",
                    ahead if not quick else None,
                    note=f"Skein {ours['context_tokens']} tokens, LangChain {peer['context_tokens']} tokens",
                )
            )
    markdown = _table(figures, buffer_tokens) + f"\n\n![Fact retention against context tokens]({plot_name})\n"
    before_path = BENCH_DIR / BEFORE
    if not quick and before_path.exists():
        before = json.loads(before_path.read_text())
        before_buffer = {f["messages"]: f["context_tokens"] for f in before["figures"] if f["config"] == BUFFER}
        markdown += (
            f"\n**Before** the summarization change (commit `{before['commit']}`, {before['started']}: "
            f"{before['note']}):\n\n" + _table(before["figures"], before_buffer) + "\n"
        )
    notes = [
        f"Seed {SEED}; conversations of {', '.join(str(s) for s in sizes)} messages; the consuming model scripted, "
        f"summaries by the bundled model (SmolLM2-135M on llama.cpp){' and ' + _bench_model() if _bench_model() else ''}.",
        "'sessions as threads': each session of the conversation is a thread of its own (facts told in the first are "
        "asked for in the last); 'participant-keyed' memory and memory.facts follow the participant across them. For "
        "memory.facts, the summarizer columns count its extraction calls (one per turn).",
        "Retention: current facts whose value is in what the consuming model is sent at the last turn (seeds, summary, "
        "kept history). Stale: changed facts shown with their old value and without the new one.",
    ]
    result.details = {
        "notes": notes,
        "markdown": markdown,
        "figures": figures,
        "conversations": {str(s): generate(s, SEED).as_dict() for s in sizes},
        "plot": plot_name,
    }
    return result
