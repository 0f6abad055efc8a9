"""Skein's built-in node types, one module per family, listed in ``NODE_TYPES``: the app config
(``workflows.apps``) registers them, in this order (the editor's palette order)."""

from .llm import LLMNode, ModelNode
from .memory import BufferMemory, FactsMemory, SummaryMemory, WindowMemory
from .output import OutputNode
from .router import LLMRouter, StaticRouter
from .template import TemplateNode
from .triggers import ChatTrigger, ManualTrigger, ScheduleTrigger, WebhookTrigger

NODE_TYPES = (
    LLMNode,
    ModelNode,
    BufferMemory,
    WindowMemory,
    SummaryMemory,
    FactsMemory,
    OutputNode,
    LLMRouter,
    StaticRouter,
    TemplateNode,
    ChatTrigger,
    ManualTrigger,
    WebhookTrigger,
    ScheduleTrigger,
)
