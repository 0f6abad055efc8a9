"""What a node sees while it runs: its id and params, the run's services and payload, and the
memories and tools attached to it (``NodeType.run`` gets one ``NodeContext``)."""

from __future__ import annotations

from dataclasses import dataclass

from engine.interfaces import MemoryBinding, RunServices
from engine.validation import Analysis, ResolvedNode


@dataclass
class NodeContext:
    node_id: str
    resolved: ResolvedNode
    analysis: Analysis
    services: RunServices

    @property
    def params(self):
        return self.resolved.params

    @property
    def payload(self) -> dict:
        return self.services.payload

    def consumers(self) -> list[ResolvedNode]:
        """The nodes this node (a memory) is attached to."""
        return self.analysis.consumers(self.node_id)

    def memory_bindings(self) -> list[MemoryBinding]:
        """The memories attached to this node's ``memory`` port (a history and facts, at most one
        of each), bound to this node as consumer."""
        return [self.analysis.memory_binding(m.node_id, self.node_id) for m in self.analysis.attached(self.node_id, "memory")]

    def attached_tools(self) -> list[NodeContext]:
        """The tool nodes attached to this node's ``tools`` port, each with a context of its own."""
        return [
            NodeContext(node_id=tool.node_id, resolved=tool, analysis=self.analysis, services=self.services)
            for tool in self.analysis.attached(self.node_id, "tools")
        ]

    def own_memory_binding(self) -> MemoryBinding:
        """This node's own memory (the node is a memory in the flow), bound to its first consumer."""
        return self.analysis.memory_binding(self.node_id)
