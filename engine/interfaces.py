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


@dataclass
class LLMResult:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0
    finish_reason: str = ""  # as the provider said: "stop", "length" (cut at max_tokens), ...

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


@dataclass
class MemoryContext:
    """The messages a memory contributes, in order: seed messages, the summary, the kept history."""

    messages: list[dict] = field(default_factory=list)
    summary: str | None = None
    # Sent before the other memories of the same consumer (a memory.facts: the facts go before the history).
    first: bool = False


class MemoryServices(Protocol):
    def context(self, binding: MemoryBinding) -> MemoryContext: ...

    def record_exchange(self, binding: MemoryBinding, user_text: str, model_text: str) -> None: ...

    def replace(self, binding: MemoryBinding, messages: list[dict]) -> None: ...


class RunServices(Protocol):
    payload: dict
    memory: MemoryServices

    def call_model(self, node_id: str, ref: ModelRef, messages: list[dict]) -> LLMResult: ...

    def node_started(self, node_id: str, node_type: str, input_text: str) -> None: ...

    def node_finished(self, node_id: str, node_type: str, output_text: str, details: dict, duration_ms: int) -> None: ...

    def node_failed(self, node_id: str, node_type: str, error: str, duration_ms: int) -> None: ...

    def warn(self, node_id: str | None, message: str) -> None: ...
