from __future__ import annotations

from pydantic import Field, field_validator

from engine.registry import FlowValue, NodeResult, NodeType, Params, Port
from workflows.nodes.common import joined_text, render, template_syntax_error


class TemplateNode(NodeType):
    type = "template"
    label = "Template"
    category = "Transform"
    description = "Renders text with Jinja: {{ input }}, {{ payload.field }}, {{ messages }}."
    inputs = (Port("input"),)
    outputs = (Port("output"),)
    summary = ("{template}",)

    class Params(Params):
        template: str = Field("{{ input }}", max_length=50000, json_schema_extra={"format": "prompt"})

        @field_validator("template")
        @classmethod
        def _parses(cls, value: str) -> str:
            error = template_syntax_error(value)
            if error:
                raise ValueError(error)
            return value

    def run(self, ctx, inputs):
        messages = [m for v in inputs.get("input", []) for m in (v.messages or [])]
        text = render(ctx.params.template, input_text=joined_text(inputs), payload=ctx.payload, messages=messages)
        return NodeResult(outputs={"output": FlowValue(text)})
