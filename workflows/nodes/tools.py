"""Tools an agent can call (attached to an ``llm`` node's ``tools`` port), and the HTTP request as a
step of its own (docs/tools.md).

- ``tool.http``: an HTTP request the model can call, its URL and body templates over the model's
  arguments, its headers able to use the owner's stored secrets;
- ``tool.workflow``: another published workflow of the same owner, called as a function;
- ``tool.mcp``: the tools of an MCP server (Streamable HTTP);
- ``http.request``: the same request machinery as ``tool.http``, on the flow (no model deciding).

Every request goes through the network guard; secrets never reach the model or the trace.
"""

from __future__ import annotations

import json
import re
from typing import Literal

import jmespath
from jmespath.exceptions import JMESPathError
from pydantic import ConfigDict, Field, field_validator

from engine.interfaces import ToolOutcome, ToolSpec
from engine.registry import FlowValue, NodeError, NodeResult, NodeType, Params, Port, PortKind, issue
from engine.tool_loop import schema_problem
from workflows.nodes.common import joined_text, render, template_syntax_error

TOOL_PORT = Port("tool", PortKind.TOOL)
TOOL_NAME = r"^[A-Za-z0-9_-]{1,64}$"
SECRET_NAME = r"^[A-Za-z0-9_.-]{1,100}$"
MAX_HEADERS = 50
EMPTY_ARGUMENTS = {"type": "object", "properties": {}}
MemoryPolicy = Literal["keep", "call_only", "none"]  # engine.tool_loop.MEMORY_POLICIES


def _shown_first(*names: str):
    """Params' JSON Schema with ``names`` first: the editor's form follows the schema's order, and a
    tool's name and description come before the request that serves it."""

    def reorder(schema: dict, _model) -> None:
        properties = schema.get("properties", {})
        schema["properties"] = {n: properties[n] for n in names if n in properties} | {
            n: p for n, p in properties.items() if n not in names
        }

    return reorder


class ToolParams(Params):
    """What every tool has: how its calls are kept in memory, and how much of a result is sent."""

    memory: MemoryPolicy = Field(
        "keep", description="keep: the call and its result; call_only: the call and a note; none: neither is kept in memory"
    )
    max_result_tokens: int = Field(2000, ge=1, le=100_000, description="The longest result sent to the model and kept, in its tokens")


class RequestParams(Params):
    """An HTTP request, written as templates (``http.request`` and ``tool.http``)."""

    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE"] = "GET"
    url: str = Field(..., min_length=1, max_length=4000, json_schema_extra={"format": "template"})
    headers: dict[str, str] = Field(
        default_factory=dict,
        description="Templates; {{ secrets.NAME }} is a stored secret",
        json_schema_extra={"format": "headers"},  # the editor's header rows, with a secret picker
    )
    body: str = Field("", max_length=100_000, json_schema_extra={"format": "template"})
    secrets: list[str] = Field(
        default_factory=list,
        max_length=20,
        description="The stored secrets the headers use, by name",
        json_schema_extra={"format": "secret_names"},  # the editor fills it in from the headers
    )
    result_path: str = Field("", max_length=1000, description="A JMESPath expression picking the part of a JSON answer to use")
    timeout_s: float = Field(20.0, ge=0.5, le=120)

    @field_validator("url", "body")
    @classmethod
    def _template(cls, value: str) -> str:
        if problem := template_syntax_error(value):
            raise ValueError(problem)
        return value

    @field_validator("headers")
    @classmethod
    def _headers(cls, headers: dict) -> dict:
        if len(headers) > MAX_HEADERS:
            raise ValueError(f"at most {MAX_HEADERS} headers")
        for name, value in headers.items():
            if not re.fullmatch(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}", name):
                raise ValueError(f"'{name[:100]}' is not an HTTP header name")
            if len(value) > 4000:
                raise ValueError(f"the value of '{name}' is longer than 4000 characters")
            if problem := template_syntax_error(value):
                raise ValueError(f"{name}: {problem}")
        return headers

    @field_validator("secrets")
    @classmethod
    def _secret_names(cls, names: list[str]) -> list[str]:
        for name in names:
            if not re.fullmatch(SECRET_NAME, name):
                raise ValueError(f"'{name[:100]}' is not a secret's name (letters, digits, '_', '.', '-')")
        return names

    @field_validator("result_path")
    @classmethod
    def _result_path(cls, path: str) -> str:
        if path:
            try:
                jmespath.compile(path)
            except JMESPathError as exc:
                raise ValueError(f"not a JMESPath expression: {exc}") from None
        return path


def send(ctx, params: RequestParams, variables: dict) -> tuple[dict, str]:
    """Render and send the request: (the answer, the text it gives: the ``result_path``'s pick of
    a JSON answer, else the answer's text). An HTTP error status is a ``NodeError``."""
    secrets = ctx.services.tools.secrets(params.secrets) if params.secrets else {}
    url = render(params.url, **variables).strip()
    headers = {name: render(value, secrets=secrets, **variables) for name, value in params.headers.items()}
    body = render(params.body, **variables) if params.body and params.method != "GET" else None
    answer = ctx.services.tools.http(
        method=params.method, url=url, headers=headers, body=body, timeout=params.timeout_s, redact=list(secrets.values())
    )
    if answer["status"] >= 400:
        raise NodeError(f"HTTP {answer['status']} from {answer['url']}: {answer['text'][:300]}")
    if answer.get("json") is not None:
        picked = jmespath.search(params.result_path, answer["json"]) if params.result_path else answer["json"]
        return answer, picked if isinstance(picked, str) else json.dumps(picked, ensure_ascii=False)
    if params.result_path:
        raise NodeError(f"the answer of {answer['url']} is not JSON, so result_path cannot pick from it")
    return answer, answer["text"]


class ToolNode(NodeType):
    """A tool: its ``tool`` output attaches to an LLM node's ``tools`` port."""

    outputs = (TOOL_PORT,)
    category = "Tools"

    def check(self, node_id, params, view):
        if not view.outgoing.get("tool"):
            return [issue(node_id, "tool", "attach this tool to an LLM node's tools port")]
        return []


class HTTPToolNode(ToolNode):
    type = "tool.http"
    label = "HTTP tool"
    description = "An HTTP request the agent can call, with arguments the model fills in."
    summary = ("{name}", " · {method}")

    class Params(RequestParams, ToolParams):
        model_config = ConfigDict(extra="forbid", json_schema_extra=_shown_first("name", "description", "parameters"))

        name: str = Field(..., pattern=TOOL_NAME, description="The function's name the model sees")
        description: str = Field(..., min_length=1, max_length=2000, description="What it does, for the model to know when to call it")
        # A default, not a factory, so the schema shows it (pydantic copies it for each params object).
        parameters: dict = Field(
            default=EMPTY_ARGUMENTS,
            description="The JSON Schema of the arguments; templates see them as {{ args.NAME }}",
            json_schema_extra={"format": "json"},
        )

        @field_validator("parameters")
        @classmethod
        def _parameters(cls, schema: dict) -> dict:
            if problem := schema_problem(schema):
                raise ValueError(problem)
            if len(json.dumps(schema)) > 50_000:
                raise ValueError("the schema is longer than 50,000 characters")
            return schema

    def tool_specs(self, ctx):
        params = ctx.params
        return [ToolSpec(name=params.name, description=params.description, parameters=params.parameters)]

    def tool_call(self, ctx, name, arguments, *, timeout):
        params = ctx.params.model_copy(update={"timeout_s": min(ctx.params.timeout_s, timeout)})
        answer, text = send(ctx, params, {"args": arguments})
        return ToolOutcome(content=text, details={"method": params.method, "url": answer["url"], "status": answer["status"]})


class HTTPRequestNode(NodeType):
    type = "http.request"
    label = "HTTP request"
    category = "Steps"
    description = "Sends an HTTP request (a webhook, an API) and passes its answer on; templates see {{ input }} and {{ payload }}."
    inputs = (Port("input"),)
    outputs = (Port("output"),)
    summary = ("{method} ", "{url}")

    class Params(RequestParams):
        pass

    def run(self, ctx, inputs):
        answer, text = send(ctx, ctx.params, {"input_text": joined_text(inputs), "payload": ctx.payload})
        return NodeResult(outputs={"output": FlowValue(text)}, details={"url": answer["url"], "status": answer["status"]})


class WorkflowToolNode(ToolNode):
    type = "tool.workflow"
    label = "Workflow tool"
    description = "Another of your published workflows, called by the agent as a function (its reply is the result)."
    summary = ("{name}",)

    class Params(ToolParams):
        model_config = ConfigDict(extra="forbid", json_schema_extra=_shown_first("workflow", "name", "description"))

        workflow: int = Field(
            ..., ge=1, le=2**63 - 1, description="The published workflow to call", json_schema_extra={"format": "workflow"}
        )
        name: str = Field(..., pattern=TOOL_NAME, description="The function's name the model sees")
        description: str = Field(..., min_length=1, max_length=2000, description="What it does, for the model to know when to call it")
        timeout_s: float = Field(60.0, ge=1, le=600, description="How long one call may take")

    PARAMETERS = {
        "type": "object",
        "properties": {"message": {"type": "string", "description": "The message to send it"}},
        "required": ["message"],
    }

    def tool_specs(self, ctx):
        params = ctx.params
        return [ToolSpec(name=params.name, description=params.description, parameters=self.PARAMETERS)]

    def tool_call(self, ctx, name, arguments, *, timeout):
        return ctx.services.tools.workflow_call(
            node_id=ctx.node_id, workflow_id=ctx.params.workflow, message=arguments["message"], timeout=min(ctx.params.timeout_s, timeout)
        )


class MCPToolNode(ToolNode):
    type = "tool.mcp"
    label = "MCP tools"
    description = "The tools of an MCP server (Streamable HTTP), for the agent to call."
    summary = ("{url}",)

    class Params(ToolParams):
        model_config = ConfigDict(extra="forbid", json_schema_extra=_shown_first("url", "secret", "allowed_tools"))

        url: str = Field(..., min_length=1, max_length=2000, pattern=r"^https?://", description="The server's MCP endpoint")
        secret: str | None = Field(
            None,
            pattern=SECRET_NAME,
            description="A stored secret sent as the Authorization header",
            json_schema_extra={"format": "secret"},
        )
        allowed_tools: list[str] = Field(
            default_factory=list,
            max_length=200,
            description="The server's tools the model may call (empty: all of them)",
            json_schema_extra={"format": "mcp_tools"},  # the editor lists the server's tools to choose from
        )
        timeout_s: float = Field(30.0, ge=1, le=300, description="How long listing or one call may take")

    def _secret(self, ctx) -> str | None:
        name = ctx.params.secret
        return ctx.services.tools.secrets([name])[name] if name else None

    def tool_specs(self, ctx):
        params = ctx.params
        listed = ctx.services.tools.mcp_tools(url=params.url, secret=self._secret(ctx), timeout=params.timeout_s)
        allowed = set(params.allowed_tools)
        return [spec for spec in listed if not allowed or spec.name in allowed]

    def tool_call(self, ctx, name, arguments, *, timeout):
        params = ctx.params
        return ctx.services.tools.mcp_call(
            url=params.url, secret=self._secret(ctx), name=name, arguments=arguments, timeout=min(params.timeout_s, timeout)
        )
