"""LLM nodes: ``llm`` answers with a model; ``llm.model`` defines a model to attach elsewhere."""

from __future__ import annotations

from pydantic import Field

from workflows.engine.registry import FlowValue, NodeResult, NodeType, Port, PortKind

from .common import ModelParams, joined_text, render


def chat_messages(system_prompt: str, history: list[dict], user_text: str) -> list[dict]:
    """What a consuming model receives: system prompt, memory (seeds, summary, kept), input."""
    messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return messages + history + [{"role": "user", "content": user_text}]


def ask_model(ctx, ref, system_prompt: str, user_text: str):
    """Call the node's model with its memory; returns the memory binding (or None) and the result."""
    binding = ctx.memory_binding()
    history = ctx.services.memory.context(binding).messages if binding else []
    return binding, ctx.services.call_model(ctx.node_id, ref, chat_messages(system_prompt, history, user_text))


def remember(ctx, binding, user_text: str, model_text: str) -> None:
    """The node's exchange goes to its memory (memory/ decides which histories take it when)."""
    if binding is not None:
        ctx.services.memory.record_exchange(binding, user_text, model_text)


class LLMNode(NodeType):
    type = "llm"
    label = "LLM"
    category = "AI"
    description = "Answers the input with a model, seeing the attached memory."
    inputs = (Port("input"), Port("memory", PortKind.MEMORY))
    outputs = (Port("output"),)
    summary = ("{model}",)

    class Params(ModelParams):
        system_prompt: str = Field(
            "You are a helpful assistant.", max_length=100000, json_schema_extra={"format": "prompt"}
        )
        max_tokens: int | None = Field(None, ge=1, le=1_000_000)

    def model_ref_of(self, params):
        return params.model_ref(params.max_tokens)

    def run(self, ctx, inputs):
        params = ctx.params
        ref = self.model_ref_of(params)
        user_text = joined_text(inputs)
        system_prompt = render(params.system_prompt, input_text=user_text, payload=ctx.payload)
        binding, result = ask_model(ctx, ref, system_prompt, user_text)
        remember(ctx, binding, user_text, result.text)
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
