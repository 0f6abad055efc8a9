"""What memory a thread has, as its models would see it next (read side of the memory API)."""

from __future__ import annotations

from workflows.engine.graph import Graph
from workflows.engine.validation import analyze

from . import selectors, strategies
from .runtime import history_key
from .tokens import count_message

MEMORY_TYPES = ("memory.buffer", "memory.window", "memory.summary")


def thread_memory_nodes(thread) -> list:
    """The memory nodes of the graph this thread last ran (else the draft), thread-keyed ones only."""
    last_run = thread.runs.select_related("version").order_by("-id").first()
    graph = last_run.version.graph if last_run else thread.workflow.graph
    analysis = analyze(Graph.parse(graph))
    return [
        rn
        for _, rn in sorted(analysis.nodes.items())
        if rn.node_type.type in MEMORY_TYPES and rn.params.key == "thread"
    ]


def memory_identity(rn) -> tuple[str, str]:
    kind = rn.params.history
    return kind, {"global": "", "node": rn.node_id}.get(kind, rn.params.name)


def memory_view(thread, rn) -> dict:
    kind, name = memory_identity(rn)
    history = selectors.history_find(
        workflow_id=thread.workflow_id, kind=kind, name=name, key=history_key(key_param="thread", thread_id=thread.pk, run_id=0)
    )
    plan = strategies.plan(rn.node_type.type, rn.params, history, rn.node_id)
    messages = [{"role": m.role, "content": m.content, "token_count": count_message(m.role, m.content)} for m in rn.params.seed_messages]
    if plan.summary:
        text = strategies.SUMMARY_PREFIX + plan.summary
        messages.append({"role": "system", "content": text, "token_count": count_message("system", text)})
    # A due summarization happens when the model is next called; until then all of it would be sent.
    kept = plan.to_summarize + plan.kept
    messages += [{"role": m["role"], "content": m["content"], "token_count": m["token_count"]} for m in kept]
    return {
        "name": name if kind == "named" else rn.node_id,
        "node": rn.node_id,
        "type": rn.node_type.type,
        "history": kind,
        "summary": plan.summary,
        "summary_through": plan.summary_through,
        "summarize_next": bool(plan.to_summarize),
        "messages": messages,
        "token_count": sum(m["token_count"] for m in messages),
    }


def find_memory(thread, name: str):
    """A memory node by its id, or the first one serving the named history ``name``."""
    nodes = thread_memory_nodes(thread)
    for rn in nodes:
        if rn.node_id == name:
            return rn
    for rn in nodes:
        if rn.params.history == "named" and rn.params.name == name:
            return rn
    return None
