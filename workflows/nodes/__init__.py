"""Skein's built-in node types, one module per family, listed in ``NODE_TYPES``: the app config
(``workflows.apps``) registers them, in this order (the editor's palette order)."""

from workflows.nodes.llm import LLMNode, ModelNode
from workflows.nodes.memory import BufferMemory, FactsMemory, SummaryMemory, WindowMemory
from workflows.nodes.output import OutputNode
from workflows.nodes.router import LLMRouter, StaticRouter
from workflows.nodes.template import TemplateNode
from workflows.nodes.tools import HTTPRequestNode, HTTPToolNode, MCPToolNode, WorkflowToolNode
from workflows.nodes.triggers import ChatTrigger, ManualTrigger, ScheduleTrigger, WebhookTrigger

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
    HTTPRequestNode,
    HTTPToolNode,
    WorkflowToolNode,
    MCPToolNode,
    ChatTrigger,
    ManualTrigger,
    WebhookTrigger,
    ScheduleTrigger,
)
