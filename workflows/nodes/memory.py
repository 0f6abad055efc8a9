"""Conversation memory nodes (docs/memory.md#conversation-memory).

A memory node attaches to a consuming node's ``memory`` port. The strategies themselves (what is
kept, when to summarize) live in the ``memory`` app; these classes declare params and ports and,
when the node sits in the flow, replace its history (``set_history``) or emit its messages.
"""

from __future__ import annotations

import json
from typing import Literal

from pydantic import Field, model_validator

from engine.registry import FlowValue, NodeError, NodeResult, NodeType, Params, Port, PortKind, issue
from memory import facts as fact_rules
from memory import spec as memory_spec
from memory.summary_prompt import DEFAULT_SUMMARY_PROMPT
from memory.tool_rounds import pairing_problem

CONSUMERS = ("llm", "router.llm")


class Message(Params):
    role: Literal["system", "user", "assistant"]
    content: str = Field(..., max_length=100000)


class HistoryMessage(Params):
    """A message ``set_history`` takes: OpenAI's shape, tool rounds included."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = Field("", max_length=100000)
    tool_calls: list[dict] | None = Field(None, max_length=128)
    tool_call_id: str | None = Field(None, max_length=100)


class MemoryParams(Params):
    history: Literal["global", "node", "named"] = Field("global", description="Which history this memory serves")
    name: str = Field("", max_length=100, description="The shared history's name (for named)")
    key: Literal["thread", "run", "participant"] = Field(
        "thread",
        description="Persist across a thread's turns, one run only, or across all threads of the participant (runs with no participant keep it by the thread)",
    )
    seed_messages: list[Message] = Field(default_factory=list, max_length=200, description="Few-shot messages, always sent first")
    emit_messages: bool = Field(False, description="Send the current context messages out of the messages port")

    @model_validator(mode="after")
    def _named_needs_name(self):
        if self.history == "named" and not self.name.strip():
            raise ValueError("a named history needs a name")
        return self


class MemoryNode(NodeType):
    category = "Memory"
    inputs = (Port("set_history", label="set history"),)
    outputs = (Port("memory", PortKind.MEMORY), Port("messages"))
    runs_as_source = True  # with nothing flowing in, a memory whose messages port is wired still emits
    summary = ("{history} history", " · {max_messages} msgs")

    def strategy(self, params, attached) -> memory_spec.Buffer | memory_spec.Window | memory_spec.Summary:
        return memory_spec.Buffer()

    def memory_spec(self, node_id, params, attached) -> memory_spec.MemorySpec:
        return memory_spec.MemorySpec(
            node=node_id,
            history=memory_spec.HistoryRef.of(params.history, memory_node=node_id, name=params.name),
            scope=params.key,
            seeds=tuple({"role": m.role, "content": m.content} for m in params.seed_messages),
            strategy=self.strategy(params, attached),
        )

    def check(self, node_id, params, view):
        issues = consumer_issues(node_id, view)
        consumers = view.outgoing.get("memory", [])
        if params.history == "node" and len(consumers) > 1:
            issues.append(issue(node_id, "history", "a node history serves one node; use a named history to share"))
        if view.outgoing.get("messages") and not params.emit_messages:
            issues.append(issue(node_id, "emit_messages", "turn on emit_messages to use the messages output"))
        return issues

    def run(self, ctx, inputs):
        binding = ctx.own_memory_binding()
        replaced = 0
        if inputs.get("set_history"):
            messages = history_from_input(inputs["set_history"])
            ctx.services.memory.replace(binding, messages)
            replaced = len(messages)
        outputs = {}
        if ctx.params.emit_messages:
            context = ctx.services.memory.context(binding).messages
            outputs["messages"] = FlowValue(json.dumps(context, ensure_ascii=False), messages=context)
        return NodeResult(outputs=outputs, details={"replaced": replaced} if inputs.get("set_history") else {})


def consumer_issues(node_id: str, view) -> list[dict]:
    return [
        issue(node_id, "memory", "memory can only attach to an llm or router.llm node")
        for consumer in view.outgoing.get("memory", [])
        if view.node_types.get(consumer) not in CONSUMERS
    ]


def external_model_issues(node_id: str, params, view) -> list[dict]:
    """``llm_source: external`` with nothing on the ``llm`` port: an error at save time."""
    if params.llm_source == "external" and not view.incoming.get("llm"):
        return [issue(node_id, "llm", "llm_source is external: attach an llm.model node to the llm port")]
    return []


def history_from_input(values: list[FlowValue]) -> list[dict]:
    """``set_history`` takes messages from the flow: a value's message list, or JSON text of one;
    tool rounds in OpenAI's shape, each call with its results (a 'broken pair' fails the step)."""
    messages: list = []
    for value in values:
        if value.messages is not None:
            messages.extend(value.messages)
            continue
        try:
            parsed = json.loads(value.text)
        except ValueError:
            raise NodeError("set_history expects a list of {role, content} messages (as JSON)") from None
        if not isinstance(parsed, list):
            raise NodeError("set_history expects a JSON list of {role, content} messages")
        messages.extend(parsed)
    try:
        history = [HistoryMessage.model_validate(m).model_dump(exclude_none=True) for m in messages]
    except Exception as exc:
        raise NodeError(f"set_history: invalid message: {exc}") from None
    for message in history:
        message.setdefault("content", "")
    if problem := pairing_problem(history):
        raise NodeError(f"set_history: {problem}")
    return history


class BufferMemory(MemoryNode):
    type = "memory.buffer"
    label = "Buffer memory"
    description = "Sends the whole history."

    class Params(MemoryParams):
        pass


class WindowMemory(MemoryNode):
    type = "memory.window"
    label = "Window memory"
    description = "Sends the newest messages: the last K, or as many as fit a token limit."

    class Params(MemoryParams):
        max_messages: int | None = Field(None, ge=1, le=100000, description="Keep the newest K messages (20 when no limit is set)")
        max_tokens: int | None = Field(None, ge=1, le=10_000_000, description="Keep the newest messages within this many tokens")

    def strategy(self, params, attached):
        # A limit that is not set does not apply; both set, both hold.
        return memory_spec.Window(max_messages=params.max_messages, max_tokens=params.max_tokens)


class SummaryMemory(MemoryNode):
    type = "memory.summary"
    label = "Summarizing memory"
    description = "Condenses older messages into a running summary, keeping the newest ones verbatim."
    inputs = (Port("set_history", label="set history"), Port("llm", PortKind.LLM))

    class Params(MemoryParams):
        max_messages: int | None = Field(20, ge=2, le=100000, description="Summarize when the history reaches this many messages")
        max_tokens: int | None = Field(None, ge=1, le=10_000_000, description="...or this many tokens")
        keep_last: int = Field(6, ge=0, le=1000, description="Newest messages kept verbatim")
        llm_source: Literal["from_parent", "external"] = Field(
            "from_parent", description="Summarize with the consuming node's model, or the model on the llm port"
        )
        summary_prompt: str = Field(DEFAULT_SUMMARY_PROMPT, max_length=20000, json_schema_extra={"format": "prompt"})

        @model_validator(mode="after")
        def _limits(self):
            if self.max_messages is None and self.max_tokens is None:
                raise ValueError("set max_messages or max_tokens")
            if self.max_messages is not None and self.keep_last >= self.max_messages:
                raise ValueError("keep_last must be smaller than max_messages")
            return self

    def strategy(self, params, attached):
        models = attached("llm") if params.llm_source == "external" else []
        return memory_spec.Summary(
            max_messages=params.max_messages,
            max_tokens=params.max_tokens,
            keep_last=params.keep_last,
            prompt=params.summary_prompt,
            external=params.llm_source == "external",
            # The attached llm.model's own params (temperature included) make the summarizer call.
            external_model=models[0].node_type.model_ref_of(models[0].params) if models else None,
            external_node=models[0].node_id if models else None,
        )

    def check(self, node_id, params, view):
        return super().check(node_id, params, view) + external_model_issues(node_id, params, view)


class FactsMemory(NodeType):
    type = "memory.facts"
    label = "Facts memory"
    category = "Memory"
    description = "Keeps facts about the participant across threads; sends them before the history and learns new ones after each turn."
    inputs = (Port("llm", PortKind.LLM),)
    outputs = (Port("memory", PortKind.MEMORY),)
    summary = ("{key} facts",)

    class Params(Params):
        llm_source: Literal["from_parent", "external"] = Field(
            "from_parent", description="Extract facts with the consuming node's model, or the model on the llm port"
        )
        extract_prompt: str = Field(
            fact_rules.DEFAULT_EXTRACT_PROMPT,
            min_length=1,
            max_length=20000,
            json_schema_extra={"format": "prompt"},
            description="What to extract after each turn",
        )
        max_facts: int = Field(50, ge=1, le=fact_rules.MAX_FACTS, description="Keep at most this many current facts")
        key: Literal["participant", "thread"] = Field(
            "participant", description="Facts about the participant across threads, or of this thread only"
        )

    def memory_spec(self, node_id, params, attached):
        models = attached("llm") if params.llm_source == "external" else []
        return memory_spec.MemorySpec(
            node=node_id,
            history=memory_spec.HistoryRef.of(memory_spec.NODE, memory_node=node_id),
            scope=params.key,
            strategy=memory_spec.Facts(
                prompt=params.extract_prompt,
                max_facts=params.max_facts,
                external=params.llm_source == "external",
                external_model=models[0].node_type.model_ref_of(models[0].params) if models else None,
                external_node=models[0].node_id if models else None,
            ),
        )

    def check(self, node_id, params, view):
        issues = consumer_issues(node_id, view) + external_model_issues(node_id, params, view)
        if params.llm_source == "from_parent" and not view.outgoing.get("memory"):
            issues.append(
                issue(
                    node_id,
                    "llm_source",
                    "no model to extract facts with: attach this memory to an llm node, or attach an llm.model and use external",
                )
            )
        return issues
