"""Graph builders for tests: React Flow JSON, as the editor saves it, from the sample library
(workflows/samples.py) with the node ids and spacing tests have always used."""

from __future__ import annotations

from engine.graph import edge_json as edge
from engine.graph import node_json as node
from workflows.samples import Layout, agent, chatbot

__all__ = ["agent_graph", "chat_graph", "edge", "node"]

CHAT_IDS = {"llm": "agent", "output": "out", "memory": "mem"}
TEST_LAYOUT = Layout(column=200, row=200)


def chat_graph(
    provider_id: int,
    *,
    model: str = "agent-model",
    system_prompt: str = "You are a test bot.",
    memory: dict | None = None,
    summarizer: dict | None = None,
) -> dict:
    """trigger.chat -> llm -> output; optionally a memory on the llm and an llm.model on the memory."""
    return chatbot(
        {"model": model, "provider": provider_id},
        system_prompt=system_prompt,
        memory=memory,
        summarizer=summarizer,
        ids=CHAT_IDS,
        layout=TEST_LAYOUT,
    )


def agent_graph(
    provider_id: int, tools: list[dict], *, model: str = "agent-model", system_prompt: str = "You are a test agent.", memory=None, **llm
) -> dict:
    """trigger.chat -> llm (with ``tools`` on its tools port) -> output; optionally a memory."""
    return agent(
        {"model": model, "provider": provider_id},
        system_prompt=system_prompt,
        tools=tools,
        memory=memory,
        ids=CHAT_IDS,
        layout=TEST_LAYOUT,
        **llm,
    )
