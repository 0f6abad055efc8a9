from __future__ import annotations

from workflows.engine.registry import NodeResult, NodeType, Port, register

from .common import joined_text


@register
class OutputNode(NodeType):
    type = "output"
    label = "Output"
    category = "Output"
    description = "The reply the participant sees. Router branches may meet here."
    inputs = (Port("input"),)

    def run(self, ctx, inputs):
        text = joined_text(inputs)
        return NodeResult(outputs={}, details={"reply": text, "output_text": text})
