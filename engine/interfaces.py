"""What the executor needs from the outside world, as plain interfaces.

The Django side implements them in ``runs.runtime`` (model calls through litellm, steps and
events) and ``memory.runtime`` (histories); tests of the engine may implement them in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class ModelRef:
    """Which model a node calls: a litellm model string, or a model on a stored provider."""

    model: str
    provider: int | None = None
    temperature: float | None = None
    max_tokens: int | None = None


@dataclass(frozen=True)
class ToolSpec:
    """A function a model may call, as OpenAI's tools describe one (litellm's ``tools``)."""

    name: str
    description: str
    parameters: dict  # the JSON Schema of its arguments

    def as_openai(self) -> dict:
        return {"type": "function", "function": {"name": self.name, "description": self.description, "parameters": self.parameters}}


@dataclass(frozen=True)
class ToolCall:
    """One call a model asked for: ``arguments`` is the JSON text as the model wrote it."""

    id: str
    name: str
    arguments: str

    def as_openai(self) -> dict:
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


@dataclass
class ToolOutcome:
    """What a tool answered: ``content`` goes back to the model as the call's result (a failure
    too, with ``error`` saying why); ``details`` are for the trace (never a secret)."""

    content: str
    error: str = ""
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class LLMResult:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    finish_reason: str = ""  # as the provider said: "stop", "length" (cut at max_tokens), "tool_calls", ...
    tool_calls: list[ToolCall] = field(default_factory=list)  # the calls the model asked for, in order

    @property
    def cut(self) -> bool:
        """The model stopped because it reached max_tokens: the text ends mid-answer."""
        return self.finish_reason == "length"

    def details(self) -> dict[str, Any]:
        details = {
            "model": self.model,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cost": self.cost,
        }
        if self.finish_reason:
            details["finish_reason"] = self.finish_reason
        if self.cut:
            details["cut"] = True
        return details


@dataclass(frozen=True)
class MemoryBinding:
    """A memory as one consumer uses it: the memory's spec, built by the memory node's type and
    read only by ``memory/`` (the engine does not look inside), and the node that consumes it."""

    spec: Any
    consumer_node: str | None = None
    consumer_model: ModelRef | None = None
    # The consumer calls tools: earlier tool rounds are sent to it as tool messages, else as text.
    consumer_tools: bool = False


@dataclass
class MemoryContext:
    """The messages a memory contributes, in order: seed messages, the summary, the kept history."""

    messages: list[dict] = field(default_factory=list)
    summary: str | None = None
    # Sent before the other memories of the same consumer (a memory.facts: the facts go before the history).
    first: bool = False


class MemoryServices(Protocol):
    def context(self, binding: MemoryBinding) -> MemoryContext: ...

    def record_exchange(self, binding: MemoryBinding, user_text: str, model_text: str, rounds: list[dict] = ()) -> None:
        """The consumer's exchange: its input, the tool rounds in between (assistant messages with
        ``tool_calls`` and ``tool`` results, as each tool's memory policy keeps them), its answer."""
        ...

    def replace(self, binding: MemoryBinding, messages: list[dict]) -> None: ...


class ToolServices(Protocol):
    """What tool nodes reach the world through (``runs.runtime`` implements it for a run)."""

    def secrets(self, names: list[str]) -> dict[str, str]:
        """The owner's stored secrets of these names (``NodeError`` for one that does not exist)."""
        ...

    def http(self, *, method: str, url: str, headers: dict, body: str | None, timeout: float, redact: list[str]) -> dict:
        """One HTTP request through the network guard: ``{status, content_type, text, json}``."""
        ...

    def mcp_tools(self, *, url: str, secret: str | None, timeout: float) -> list[ToolSpec]: ...

    def mcp_call(self, *, url: str, secret: str | None, name: str, arguments: dict, timeout: float) -> ToolOutcome: ...

    def workflow_call(self, *, node_id: str, workflow_id: int, message: str, timeout: float) -> ToolOutcome:
        """A turn of another published workflow of the owner, on a thread of its own per calling thread."""
        ...

    def cut_to_tokens(self, ref: ModelRef | None, text: str, max_tokens: int) -> tuple[str, bool]:
        """``text`` cut to ``max_tokens`` of the model's tokenizer, and whether it was cut."""
        ...

    def started(self, node_id: str, tool_node: str, call: ToolCall) -> None: ...

    def finished(self, node_id: str, tool_node: str, call: ToolCall, outcome: ToolOutcome, duration_ms: int) -> None: ...


class RunServices(Protocol):
    payload: dict
    memory: MemoryServices
    tools: ToolServices

    def call_model(
        self, node_id: str, ref: ModelRef, messages: list[dict], *, tools: list[ToolSpec] | None = None, tool_choice: str | None = None
    ) -> LLMResult:
        """The running node's model call; each call of a node is one round of its trace."""
        ...

    def node_started(self, node_id: str, node_type: str, input_text: str) -> None: ...

    def node_finished(self, node_id: str, node_type: str, output_text: str, details: dict, duration_ms: int) -> None: ...

    def node_failed(self, node_id: str, node_type: str, error: str, duration_ms: int) -> None: ...

    def warn(self, node_id: str | None, message: str) -> None: ...
