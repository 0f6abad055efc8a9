"""LLM nodes: ``llm`` answers with a model; ``llm.model`` defines a model to attach elsewhere."""

from __future__ import annotations

from pydantic import Field

from engine.registry import FlowValue, NodeResult, NodeType, Port, PortKind, issue
from engine.tool_loop import answer_with_tools, tools_of
from workflows.nodes.common import ModelParams, joined_text, render

# A consumer takes one history memory and one memory.facts at most (validation says so).
MEMORY_PORT = Port("memory", PortKind.MEMORY, multiple=True)
TOOLS_PORT = Port("tools", PortKind.TOOL, multiple=True)
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


def memory_messages(ctx) -> tuple[list, list[dict]]:
    """The node's memories (facts first, then the history): their bindings and what they send."""
    bindings = ctx.memory_bindings()
    contexts = [ctx.services.memory.context(binding) for binding in bindings]
    return bindings, [m for c in contexts if c.first for m in c.messages] + [m for c in contexts if not c.first for m in c.messages]


def ask_model(ctx, ref, system_prompt: str, user_text: str):
    """Call the node's model with its memories; returns the memory bindings and the result."""
    bindings, history = memory_messages(ctx)
    return bindings, ctx.services.call_model(ctx.node_id, ref, chat_messages(system_prompt, history, user_text))


def remember(ctx, bindings, user_text: str, model_text: str, rounds: list[dict] = ()) -> None:
    """The node's exchange goes to its memories (memory/ decides which histories take it when):
    its input, its tool rounds as each tool's memory policy keeps them, its answer."""
    for binding in bindings:
        ctx.services.memory.record_exchange(binding, user_text, model_text, list(rounds))


class LLMNode(NodeType):
    type = "llm"
    label = "LLM"
    category = "AI"
    description = "Answers the input with a model, seeing the attached memory and calling the attached tools."
    inputs = (Port("input"), MEMORY_PORT, TOOLS_PORT)
    outputs = (Port("output"),)
    summary = ("{model}",)

    class Params(ModelParams):
        system_prompt: str = Field("You are a helpful assistant.", max_length=100000, json_schema_extra={"format": "prompt"})
        max_tokens: int | None = Field(None, ge=1, le=1_000_000)
        max_tool_rounds: int = Field(5, ge=1, le=20, description="Rounds of tool calls in one turn before the model must answer")
        tool_budget_s: float = Field(120.0, ge=1, le=900, description="Seconds the turn's tool calls may take in all")
        call_tool_first: bool = Field(
            False, description="The model must call a tool before it answers (a small model otherwise tends to answer without looking)"
        )

    def model_ref_of(self, params):
        return params.model_ref(params.max_tokens)

    def check(self, node_id, params, view):
        return memory_port_issues(node_id, view)

    def run(self, ctx, inputs):
        params = ctx.params
        ref = self.model_ref_of(params)
        user_text = joined_text(inputs)
        system_prompt = render(params.system_prompt, input_text=user_text, payload=ctx.payload)
        tools = tools_of(ctx)
        if not tools:
            bindings, result = ask_model(ctx, ref, system_prompt, user_text)
            remember(ctx, bindings, user_text, result.text)
            return NodeResult(outputs={"output": FlowValue(result.text, cut=result.cut)}, details=result.details())
        bindings, history = memory_messages(ctx)
        messages = chat_messages(system_prompt, history, user_text)
        loop = answer_with_tools(
            ctx, ref, messages, tools, max_rounds=params.max_tool_rounds, budget_s=params.tool_budget_s, call_first=params.call_tool_first
        )
        for warning in loop.warnings:
            ctx.services.warn(ctx.node_id, warning)
        result = loop.result
        remember(ctx, bindings, user_text, result.text, loop.remembered)
        details = {**result.details(), "tool_rounds": len(loop.rounds), "tool_calls": sum(len(r) for r in loop.rounds)}
        return NodeResult(outputs={"output": FlowValue(result.text, cut=result.cut)}, details=details)


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
