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
        details = {"reply": text, "output_text": text}
        if any(value.cut for value in inputs.get("input", [])):
            details["cut"] = True  # the reply is a model's answer cut at its max_tokens
        return NodeResult(outputs={}, details=details)
