"""What a memory node is, as memory/ reads it: one typed value built by the node's type.

A ``MemorySpec`` names the history the memory serves (``HistoryRef``), what that history is keyed
by (``scope``), the seed messages always sent first, and the strategy with its limits. The engine
hands it to ``memory.runtime`` together with the consuming node; nothing in memory/ looks at node
params or type names. Pure Python: no Django, no database.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engine.interfaces import ModelRef
from memory.summary_prompt import DEFAULT_SUMMARY_MAX_TOKENS, is_default

GLOBAL, NODE, NAMED = "global", "node", "named"
THREAD, RUN, PARTICIPANT = "thread", "run", "participant"

# The consuming model summarizes "from_parent" at this temperature: a summary should be faithful,
# not creative. An external summarizer (an ``llm.model`` node) uses its own params.
FROM_PARENT_TEMPERATURE = 0.2


@dataclass(frozen=True)
class HistoryRef:
    """Which history: ``global`` (the conversation the participant sees), ``node`` (one node's
    own exchanges; ``name`` is the memory node id) or ``named`` (shared by ``name``)."""

    kind: str
    name: str = ""

    @classmethod
    def of(cls, kind: str, *, memory_node: str, name: str = "") -> HistoryRef:
        return cls(kind=kind, name={GLOBAL: "", NODE: memory_node}.get(kind, name))

    @property
    def written_by_turn(self) -> bool:
        """The global history is written once per turn (its input and reply), by the turn; node
        and named histories get each consuming node's input and model output, at once."""
        return self.kind == GLOBAL


@dataclass(frozen=True)
class Buffer:
    """Everything."""


@dataclass(frozen=True)
class Window:
    """The newest messages: at most ``max_messages`` and/or within ``max_tokens`` (a limit that is
    None does not apply)."""

    max_messages: int | None = None
    max_tokens: int | None = None


@dataclass(frozen=True)
class Summary:
    """Older messages folded into a running summary once the history not yet summarized reaches
    ``max_messages`` and/or ``max_tokens``; the newest ``keep_last`` stay verbatim."""

    max_messages: int | None = 20
    max_tokens: int | None = None
    keep_last: int = 6
    prompt: str = ""
    # None: the consuming node's model summarizes ("from_parent"); else the attached llm.model's.
    external_model: ModelRef | None = None
    external_node: str | None = None
    external: bool = False  # llm_source "external" (then a missing model is an error, not a fallback)

    def summarizer(self, consumer_model: ModelRef | None) -> ModelRef | None:
        if self.external:
            return self.external_model
        if consumer_model is None:
            return None
        max_tokens = DEFAULT_SUMMARY_MAX_TOKENS if is_default(self.prompt) else None
        return replace(consumer_model, temperature=FROM_PARENT_TEMPERATURE, max_tokens=max_tokens)

    def summarizer_node(self, consumer_node: str | None) -> str | None:
        return self.external_node if self.external else consumer_node


@dataclass(frozen=True)
class Facts:
    """A running list of facts about the participant (``memory.facts``): sent as one system
    message, extended after each turn by an extraction request (``memory/facts.py``)."""

    prompt: str = ""
    max_facts: int = 50
    external_model: ModelRef | None = None
    external_node: str | None = None
    external: bool = False

    def extractor(self, consumer_model: ModelRef | None) -> ModelRef | None:
        """The model that extracts: the attached llm.model (external), else the consumer's own."""
        return Summary.summarizer(self, consumer_model)  # the same rule as the summarizer's


@dataclass(frozen=True)
class MemorySpec:
    node: str  # the memory node's id
    history: HistoryRef
    scope: str = THREAD  # what the history is keyed by: thread | run | participant
    seeds: tuple[dict, ...] = ()
    strategy: Buffer | Window | Summary | Facts = Buffer()
