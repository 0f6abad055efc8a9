from __future__ import annotations

from django.conf import settings

from engine.registry import NodeResult, NodeType, Port
from workflows.nodes.common import joined_text


class OutputNode(NodeType):
    type = "output"
    label = "Output"
    category = "Output"
    description = "The reply the participant sees. Router branches may meet here."
    inputs = (Port("input"),)

    def run(self, ctx, inputs):
        text = reply_capped(joined_text(inputs))
        cut = any(value.cut for value in inputs.get("input", []))  # a model's answer cut at its max_tokens
        return NodeResult(outputs={}, reply=text, reply_cut=cut, output_text=text)


def reply_capped(text: str) -> str:
    """A reply is at most SKEIN_MAX_REPLY_CHARS characters (it must fit one WebSocket frame, and
    it is stored in the run, its step and the transcript); a longer one is cut, and says so."""
    limit = settings.SKEIN_MAX_REPLY_CHARS
    if len(text) <= limit:
        return text
    note = f"\n\n[reply cut: it was longer than {limit:,} characters]"
    return text[: limit - len(note)] + note
