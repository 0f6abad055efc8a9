"""Graph builders for tests: React Flow JSON, as the editor saves it."""

from __future__ import annotations

from workflows.engine.graph import edge_json as edge
from workflows.engine.graph import node_json as node


def chat_graph(
    provider_id: int,
    *,
    model: str = "agent-model",
    system_prompt: str = "You are a test bot.",
    memory: dict | None = None,
    summarizer: dict | None = None,
) -> dict:
    """trigger.chat -> llm -> output; optionally a memory on the llm and an llm.model on the memory."""
    nodes = [
        node("chat", "trigger.chat"),
        node("agent", "llm", 200, 0, model=model, provider=provider_id, system_prompt=system_prompt),
        node("out", "output", 400, 0),
    ]
    edges = [edge("chat", "agent"), edge("agent", "out")]
    if memory is not None:
        nodes.append(node("mem", memory.pop("type"), 200, 200, **memory))
        edges.append(edge("mem", "agent", "memory", "memory"))
    if summarizer is not None:
        nodes.append(node("summarizer", "llm.model", 200, 400, **summarizer))
        edges.append(edge("summarizer", "mem", "llm", "llm"))
    return {"nodes": nodes, "edges": edges}
