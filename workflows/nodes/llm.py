"""LLM nodes: ``llm`` answers with a model; ``llm.model`` defines a model to attach elsewhere."""

from __future__ import annotations

from pydantic import Field

from engine.registry import FlowValue, NodeResult, NodeType, Port, PortKind, issue
from workflows.nodes.common import ModelParams, joined_text, render

# A consumer takes one history memory and one memory.facts at most (validation says so).
MEMORY_PORT = Port("memory", PortKind.MEMORY, multiple=True)
FACTS_TYPE = "memory.facts"


def memory_port_issues(node_id: str, view) -> list[dict]:
    attached = [view.node_types.get(m) for m in view.incoming.get("memory", [])]
    facts = sum(1 for t in attached if t == FACTS_TYPE)
    issues = []
    if len(attached) - facts > 1:
        issues.append(issue(node_id, "memory", "only one history memory can attach to 'memory' (and one memory.facts)"))
    if facts > 1:
        issues.append(issue(node_id, "memory", "only one memory.facts can attach to 'memory'"))
    return issues


def chat_messages(system_prompt: str, history: list[dict], user_text: str) -> list[dict]:
    """What a consuming model receives: system prompt, memory (seeds, summary, kept), input."""
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return messages + history + [{"role": "user", "content": user_text}]


def ask_model(ctx, ref, system_prompt: str, user_text: str):
    """Call the node's model with its memories (facts first, then the history); returns the
    memory bindings and the result."""
    bindings = ctx.memory_bindings()
    contexts = [ctx.services.memory.context(binding) for binding in bindings]
    history = [m for c in contexts if c.first for m in c.messages] + [m for c in contexts if not c.first for m in c.messages]
    return bindings, ctx.services.call_model(ctx.node_id, ref, chat_messages(system_prompt, history, user_text))


def remember(ctx, bindings, user_text: str, model_text: str) -> None:
    """The node's exchange goes to its memories (memory/ decides which histories take it when)."""
    for binding in bindings:
        ctx.services.memory.record_exchange(binding, user_text, model_text)


class LLMNode(NodeType):
    type = "llm"
    label = "LLM"
    category = "AI"
    description = "Answers the input with a model, seeing the attached memory."
    inputs = (Port("input"), MEMORY_PORT)
    outputs = (Port("output"),)
    summary = ("{model}",)

    class Params(ModelParams):
        system_prompt: str = Field("You are a helpful assistant.", max_length=100000, json_schema_extra={"format": "prompt"})
        max_tokens: int | None = Field(None, ge=1, le=1_000_000)

    def model_ref_of(self, params):
        return params.model_ref(params.max_tokens)

    def check(self, node_id, params, view):
        return memory_port_issues(node_id, view)

    def run(self, ctx, inputs):
        params = ctx.params
        ref = self.model_ref_of(params)
        user_text = joined_text(inputs)
        system_prompt = render(params.system_prompt, input_text=user_text, payload=ctx.payload)
        bindings, result = ask_model(ctx, ref, system_prompt, user_text)
        remember(ctx, bindings, user_text, result.text)
        return NodeResult(outputs={"output": FlowValue(result.text, cut=result.cut)}, details=result.details())


class ModelNode(NodeType):
    type = "llm.model"
    label = "Model"
    category = "AI"
    description = "A model to attach to a summarizing memory's llm port (usually a cheaper one)."
    outputs = (Port("llm", PortKind.LLM),)
    summary = ("{model}",)

    class Params(ModelParams):
        max_tokens: int | None = Field(None, ge=1, le=1_000_000, description="Longest answer, in tokens (empty: the provider's default)")

    def model_ref_of(self, params):
        return params.model_ref(params.max_tokens)
