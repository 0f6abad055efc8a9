"""The MCP client of ``tool.mcp``: the official ``mcp`` SDK over Streamable HTTP, its requests
through the network guard, each listing or call a session of its own bounded by its timeout.

Sync callers (a turn's thread, a tool's) get plain functions; the SDK's coroutines run in an
event loop of the call's own.
"""

from __future__ import annotations

import asyncio
import json

import anyio
from django.conf import settings

from core import netguard
from engine.interfaces import ToolOutcome, ToolSpec
from engine.registry import NodeError


def list_tools(*, url: str, secret: str | None, timeout: float) -> list[ToolSpec]:
    """The server's tools as functions a model may call; ``NodeError`` if it cannot be listed."""

    async def listing(session):
        listed = await session.list_tools()
        return [
            ToolSpec(name=tool.name[:64], description=(tool.description or tool.name)[:2000], parameters=_schema(tool.input_schema))
            for tool in listed.tools
        ]

    return _with_session(url, secret, timeout, listing, "list the tools of")


def call_tool(*, url: str, secret: str | None, name: str, arguments: dict, timeout: float) -> ToolOutcome:
    """One call: its text content (and structured content, when that is all it has), or its error."""

    async def calling(session):
        result = await session.call_tool(name, arguments)
        parts = [part.text for part in result.content if getattr(part, "type", "") == "text"]
        text = "\n".join(parts)
        if not text and result.structured_content is not None:
            text = json.dumps(result.structured_content, ensure_ascii=False)
        text = text[: settings.SKEIN_TOOL_MAX_RESPONSE_BYTES]
        if result.is_error:
            return ToolOutcome(content="", error=text or "the tool reported an error", details={"server": url})
        return ToolOutcome(content=text, details={"server": url})

    return _with_session(url, secret, timeout, calling, f"call '{name}' on")


def _schema(schema) -> dict:
    """A tool's input schema as a model expects it: an object schema (a server may leave it out)."""
    if isinstance(schema, dict) and schema.get("type", "object") == "object":
        return schema
    return {"type": "object", "properties": {}}


def _with_session(url: str, secret: str | None, timeout: float, work, what: str):
    if problem := netguard.url_problem(url):
        raise NodeError(f"{url}: {problem}")
    headers = {"Authorization": secret} if secret else {}

    async def session_then_work():
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        with anyio.fail_after(timeout):
            async with netguard.async_http_client(headers=headers, timeout=timeout) as http:
                async with streamable_http_client(url, http_client=http) as streams:
                    async with ClientSession(streams[0], streams[1]) as session:
                        await session.initialize()
                        return await work(session)

    try:
        return asyncio.run(session_then_work())
    except TimeoutError:
        raise NodeError(f"could not {what} {url}: no answer within {timeout:g} s") from None
    except NodeError:
        raise
    except Exception as exc:  # the SDK raises exception groups and many types: each is a failed call
        raise NodeError(f"could not {what} {url}: {_reason(exc)}") from None


def _reason(exc: BaseException) -> str:
    """The innermost readable reason of an exception (group)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc) or type(exc).__name__
    return text.splitlines()[0][:300]
