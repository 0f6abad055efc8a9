"""Pieces shared by node families: model params and the sandboxed Jinja environment."""

from __future__ import annotations

from functools import lru_cache

from jinja2 import StrictUndefined, Template, TemplateError
from jinja2.sandbox import ImmutableSandboxedEnvironment
from pydantic import Field

from workflows.engine.registry import FlowValue, NodeError, Params
from workflows.engine.services import ModelRef

_jinja = ImmutableSandboxedEnvironment(autoescape=False, undefined=StrictUndefined)


@lru_cache(maxsize=1024)
def _compiled(template: str) -> Template:
    """Compiling costs milliseconds and prompts rarely change: each is compiled once per process."""
    return _jinja.from_string(template)


class ModelParams(Params):
    model: str = Field("gpt-4o-mini", min_length=1, max_length=200, description="The model to call")
    provider: int | None = Field(
        None, ge=1, le=2**63 - 1, description="A stored provider's id; empty uses keys from the environment"
    )
    temperature: float | None = Field(0.7, ge=0, le=2)

    def model_ref(self, max_tokens: int | None = None) -> ModelRef:
        return ModelRef(model=self.model, provider=self.provider, temperature=self.temperature, max_tokens=max_tokens)


def joined_text(inputs: dict[str, list[FlowValue]], port: str = "input") -> str:
    return "\n\n".join(v.text for v in inputs.get(port, []))


def render(template: str, *, input_text: str, payload: dict, messages: list | None = None) -> str:
    """Render a user-written template in a sandbox: no attribute tricks, no file or module access."""
    try:
        return _compiled(template).render(input=input_text, payload=payload, messages=messages or [])
    except TemplateError as exc:
        raise NodeError(f"template error: {exc}") from exc


def template_syntax_error(template: str) -> str | None:
    try:
        _jinja.parse(template)
    except TemplateError as exc:
        return f"template syntax error: {exc}"
    return None
