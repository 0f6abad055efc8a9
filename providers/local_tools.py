"""Tool calling on the bundled model (docs/tools.md#the-bundled-model-and-tools).

SmolLM2 was not trained to call functions, so a grammar holds its reply to one of two shapes:
with tools offered (OpenAI's ``tools``) it writes a call, ``{"tool": NAME, "arguments": {...}}``
(the arguments on that tool's own parameters schema), or an answer in words, anything that does
not begin with "{". ``tool_choice`` "required" leaves the answer out, a named function leaves only
that function, "none" means free text and no grammar. A short system note tells it which tools
there are and how to call one.

A history's tool rounds, which a chat template made for turns of text cannot show, are written as
text (``as_chat``), each result cut at ``MAX_RESULT_CHARS``.

Pure Python (the grammar itself is built in ``providers.local_model``)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass

MAX_TOOLS = 128  # as OpenAI's own bound
MAX_RESULT_CHARS = 2000  # of a call's arguments or result written into the prompt: the context is short
MAX_NOTE_DESCRIPTION = 200  # characters of a tool's description in the note
MAX_NOTE_ARGUMENT = 60  # characters of an argument's description in the note
NOTED_TOOLS = 24  # tools described one by one in the note; the rest are named
TOOL_KEY, ARGUMENTS_KEY = "tool", "arguments"


class UnsupportedSchema(ValueError):
    """A ``response_format`` or a tool the local model cannot be constrained to."""


@dataclass(frozen=True)
class Function:
    name: str
    description: str
    parameters: dict


@dataclass(frozen=True)
class ToolPlan:
    """What a call with tools asks of the local model: the functions it may call, whether it may
    answer in text instead, and the JSON schema its reply is held to."""

    functions: tuple[Function, ...]
    may_answer: bool

    def without_answer(self) -> ToolPlan:
        return ToolPlan(self.functions, may_answer=False)

    def call_schema(self) -> dict:
        """The JSON schema of a call: one of the functions by name, with arguments on its schema.
        Each function's parameters sit in ``$defs`` (their own local references moved along: the
        grammar's converter resolves a reference through objects only, not anyOf's list)."""
        return {
            "anyOf": [
                _object({TOOL_KEY: {"const": f.name}, ARGUMENTS_KEY: {"$ref": f"#/$defs/{_def(i)}"}}) for i, f in enumerate(self.functions)
            ],
            "$defs": {_def(i): _moved_refs(f.parameters, f"#/$defs/{_def(i)}") for i, f in enumerate(self.functions)},
        }

    def note(self) -> str:
        """The system note: each tool in a line, then the reply's shape (a few dozen tokens)."""
        lines = ["You can call these tools:"]
        lines += [f"- {_signature(f)}: {_cut(f.description, MAX_NOTE_DESCRIPTION)}" for f in self.functions[:NOTED_TOOLS]]
        if len(self.functions) > NOTED_TOOLS:
            lines.append("- and: " + ", ".join(f.name for f in self.functions[NOTED_TOOLS:]))
        call = '{"tool": "<name>", "arguments": {...}}'
        if self.may_answer:
            lines.append(f"To call a tool, reply with only {call}. Otherwise answer the user in plain words.")
        else:
            lines.append(f"Reply with only a tool call: {call}.")
        return "\n".join(lines)

    def with_note(self, messages: list[dict]) -> list[dict]:
        """``messages`` with the note at the end of the first system message (or as one, first)."""
        if messages and messages[0]["role"] == "system":
            first = messages[0]
            return [{"role": "system", "content": f"{first['content']}\n\n{self.note()}".strip()}, *messages[1:]]
        return [{"role": "system", "content": self.note()}, *messages]

    def scaffold(self) -> str:
        """The longest JSON a call is wrapped in (its tokens are not the reply's)."""
        return json.dumps({TOOL_KEY: max((f.name for f in self.functions), key=len), ARGUMENTS_KEY: {}})


def tool_plan(tools, tool_choice) -> ToolPlan | None:
    """The plan for OpenAI's ``tools`` and ``tool_choice``, or None (no tools, or "none": free text).
    Raises ``UnsupportedSchema`` for tools or a choice that is not OpenAI's shape."""
    if not tools:
        return None
    if not isinstance(tools, list) or len(tools) > MAX_TOOLS:
        raise UnsupportedSchema(f"tools must be a list of at most {MAX_TOOLS} functions")
    functions = tuple(_function(position, tool) for position, tool in enumerate(tools, 1))
    names = [f.name for f in functions]
    if len(set(names)) != len(names):
        raise UnsupportedSchema("tools: two functions have the same name")
    if tool_choice in (None, "auto"):
        return ToolPlan(functions, may_answer=True)
    if tool_choice == "none":
        return None
    if tool_choice == "required":
        return ToolPlan(functions, may_answer=False)
    chosen = tool_choice.get("function", {}).get("name") if isinstance(tool_choice, dict) else None
    if not isinstance(chosen, str):
        raise UnsupportedSchema('tool_choice must be "auto", "none", "required" or {"type": "function", "function": {"name": ...}}')
    if chosen not in names:
        raise UnsupportedSchema(f"tool_choice names '{chosen[:64]}', which is not one of the tools")
    return ToolPlan(tuple(f for f in functions if f.name == chosen), may_answer=False)


def _function(position: int, tool) -> Function:
    function = tool.get("function") if isinstance(tool, dict) and tool.get("type", "function") == "function" else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str) or not function["name"]:
        raise UnsupportedSchema(f"tools[{position}] must be {{type: 'function', function: {{name, description, parameters}}}}")
    parameters = function.get("parameters") or {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise UnsupportedSchema(f"tools[{position}] ({function['name'][:64]}): parameters must be a JSON Schema object")
    return Function(name=function["name"], description=str(function.get("description") or ""), parameters=parameters)


def _object(properties: dict) -> dict:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _def(index: int) -> str:
    return f"arguments-{index}"


def _moved_refs(schema, prefix: str):
    if isinstance(schema, list):
        return [_moved_refs(item, prefix) for item in schema]
    if not isinstance(schema, dict):
        return schema
    moved = {key: _moved_refs(value, prefix) for key, value in schema.items()}
    ref = schema.get("$ref")
    if isinstance(ref, str) and (ref == "#" or ref.startswith("#/")):
        moved["$ref"] = prefix + ref[1:]
    return moved


def _signature(function: Function) -> str:
    """``name(arg: type, other?: type (what it is))``: the arguments in few tokens."""
    properties = function.parameters.get("properties")
    properties = properties if isinstance(properties, dict) else {}
    required = set(function.parameters.get("required") or [])
    arguments = []
    for name, schema in properties.items():
        schema = schema if isinstance(schema, dict) else {}
        shown = f"{name}{'' if name in required else '?'}: {_type_of(schema)}"
        if schema.get("description"):
            shown += f" ({_cut(str(schema['description']), MAX_NOTE_ARGUMENT)})"
        arguments.append(shown)
    return f"{function.name}({', '.join(arguments)})"


def _type_of(schema: dict) -> str:
    if "enum" in schema and isinstance(schema["enum"], list):
        return " | ".join(json.dumps(value) for value in schema["enum"][:8])
    if "const" in schema:
        return json.dumps(schema["const"])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    return str(kind) if kind else "any"


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- the history, as text the chat template takes ---------------------------------------------------------
def as_chat(messages: list[dict]) -> list[dict]:
    """Messages as SmolLM2's template takes them (turns of text): an assistant's words stay its
    turn, and each call with its result becomes one system line, "You called NAME with ARGUMENTS;
    it returned: RESULT". (Measured: written as the assistant's own line, or the result as the
    user's, the model repeats the call instead of answering with it; docs/tools.md.)"""
    calls: dict[str, tuple[str, str]] = {}
    shown = []
    for message in messages:
        role, content = message.get("role"), _text(message.get("content"))
        if role == "assistant" and message.get("tool_calls"):
            for call in message["tool_calls"]:
                function = (call.get("function") if isinstance(call, dict) else None) or {}
                calls[str(call.get("id"))] = (str(function.get("name") or "a tool"), _bounded(function.get("arguments")))
            if content:
                shown.append({"role": "assistant", "content": content})
        elif role == "tool":
            name, arguments = calls.get(str(message.get("tool_call_id")), ("a tool", "{}"))
            shown.append({"role": "system", "content": f"You called {name} with {arguments}; it returned: {_bounded(content)}"})
        else:
            shown.append({"role": role, "content": content})
    return shown


def _bounded(value) -> str:
    text = value if isinstance(value, str) else json.dumps(value if value is not None else {})
    return text if len(text) <= MAX_RESULT_CHARS else text[:MAX_RESULT_CHARS] + "…"


def _text(content) -> str:
    """Message content as text (litellm allows a list of content parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return "" if content is None else str(content)


# --- the reply --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Reply:
    """A reply under tools: a call (``name`` and ``arguments``, JSON text) or ``text``."""

    text: str = ""
    name: str | None = None
    arguments: str = "{}"

    def tool_call(self) -> dict:
        """The call in OpenAI's shape, with an id of its own."""
        return {"id": f"call_{uuid.uuid4().hex[:24]}", "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


def parse_reply(raw: str) -> Reply:
    """The call or the answer of a complete reply. A call cut short (by ``max_tokens``) is no call,
    and no answer either: its JSON is not shown."""
    if not raw.startswith("{"):
        return Reply(text=raw)
    try:
        value = json.loads(raw)
    except ValueError:
        return Reply()
    if not isinstance(value, dict) or not isinstance(value.get(TOOL_KEY), str):
        return Reply()
    return Reply(name=value[TOOL_KEY], arguments=json.dumps(value.get(ARGUMENTS_KEY) or {}, ensure_ascii=False))


class ReplyStream:
    """A reply under tools as it is generated: ``feed`` returns what can be shown at once (an
    answer's text; nothing of a call, which the grammar makes begin with "{")."""

    def __init__(self):
        self.raw = ""

    def feed(self, piece: str) -> str:
        self.raw += piece
        return "" if self.raw.startswith("{") else piece
