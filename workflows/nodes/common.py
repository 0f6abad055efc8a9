"""Pieces shared by node families: model params, CPU budgets and the sandboxed Jinja environment."""

from __future__ import annotations

import operator
import re
import string
import threading
import time
from functools import lru_cache, wraps

from django.conf import settings
from jinja2 import StrictUndefined, Template, TemplateError, nodes
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError
from jinja2.utils import Namespace
from pydantic import Field

from engine.interfaces import ModelRef
from engine.registry import FlowValue, NodeError, Params


class CpuBudget:
    """The time a node may spend on its own work (matching, rendering): ``SKEIN_NODE_CPU_BUDGET_S``."""

    def __init__(self, what: str, seconds: float | None = None):
        self.what = what
        self.seconds = settings.SKEIN_NODE_CPU_BUDGET_S if seconds is None else seconds
        self.deadline = time.monotonic() + self.seconds

    def exceeded(self) -> bool:
        return time.monotonic() > self.deadline

    def check(self) -> None:
        if self.exceeded():
            raise NodeError(f"{self.what} took longer than its {self.seconds:g} s budget")


# --- templates ------------------------------------------------------------------------------------
# A template is the owner's code, run on a participant's input. Jinja's immutable sandbox stops
# attribute tricks; on top of it every render has a budget: time (SKEIN_NODE_CPU_BUDGET_S), steps
# (loop iterations, calls, operators), bytes built on the way, and the size of what it produces
# (SKEIN_TEMPLATE_MAX_CHARS). Operators and calls that could build a huge value are refused before
# they run; loops and output are checked as they go.
MAX_STEPS = 2_000_000
MAX_WORK_FACTOR = 20  # bytes built in a render, as a multiple of the output cap
MAX_INT_BITS = 4096


class TemplateLimit(SecurityError):
    """A template went past one of its bounds."""


class _Render:
    def __init__(self, max_chars: int, seconds: float):
        self.max_chars = max_chars
        self.max_work = max_chars * MAX_WORK_FACTOR
        self.deadline = time.monotonic() + seconds
        self.seconds = seconds
        self.steps = 0
        self.work = 0

    def step(self, count: int = 1) -> None:
        self.steps += count
        if self.steps > MAX_STEPS:
            raise TemplateLimit(f"the template did more than {MAX_STEPS:,} steps")
        if self.steps & 0xFF == 0 and time.monotonic() > self.deadline:
            raise TemplateLimit(f"the template took longer than its {self.seconds:g} s budget")

    def built(self, value) -> None:
        size = _size(value)
        if size > self.max_chars:
            raise TemplateLimit(f"the template built a value of {size:,} characters (at most {self.max_chars:,})")
        self.work += size
        if self.work > self.max_work:
            raise TemplateLimit(f"the template built more than {self.max_work:,} characters in all")
        self.step()

    def allows(self, estimate: int, *, upper_bound: bool = False) -> None:
        """Refuse an operation that would build ``estimate`` characters (exactly, or at most when
        ``upper_bound``: then up to the whole render's allowance is let through, and the result is
        checked once built)."""
        limit = self.max_work if upper_bound else self.max_chars
        if estimate > limit:
            raise TemplateLimit(f"this operation would build up to {estimate:,} characters (at most {limit:,})")


_current = threading.local()


def _render_state() -> _Render:
    state = getattr(_current, "render", None)
    if state is None:  # rendering outside render(): the default bounds still apply
        state = _current.render = _Render(settings.SKEIN_TEMPLATE_MAX_CHARS, settings.SKEIN_NODE_CPU_BUDGET_S)
    return state


def _size(value) -> int:
    if isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        return len(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value.bit_length() // 8
    return 1


# Filters and str methods whose integer arguments are widths or counts of what they build.
_SIZED_BY_NUMBERS = {"do_center", "do_indent", "do_batch", "do_slice", "center", "ljust", "rjust", "zfill", "expandtabs"}


def _magnitude(value, numbers_are_sizes: bool) -> int:
    """How much an argument can make a function build: its length, or (a width) its value."""
    if isinstance(value, bool):
        return 1
    if isinstance(value, (int, float)):
        if not numbers_are_sizes or value != value:
            return 1
        return int(min(abs(value), 2**62))
    return _size(value)


def _estimate(head, rest, name: str) -> int:
    sized = name in _SIZED_BY_NUMBERS
    return (_size(head) + 1) * (1 + sum(_magnitude(a, sized) for a in rest))


_PRINTF_WIDTH = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")


def _check_printf(fmt: str, limit: int) -> None:
    for width, precision in _PRINTF_WIDTH.findall(fmt):
        for number in (width, precision):
            if number == "*" or (number and int(number) > limit):
                raise TemplateLimit("a format width or precision is too large")


def _check_format_spec(fmt: str, limit: int) -> None:
    for _literal, _field, spec, _conversion in string.Formatter().parse(fmt):
        if spec and ("{" in spec or any(int(n) > limit for n in re.findall(r"\d+", spec))):
            raise TemplateLimit("a format width or precision is too large")


def _checked_binop(op: str, left, right):
    """``*``, ``**``, ``+`` and ``%``: refused before they could build a huge value."""
    render = _render_state()
    render.step()
    if op == "**":
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            if right * max(abs(left).bit_length(), 1) > MAX_INT_BITS:
                raise TemplateLimit(f"{left} ** {right} is too large a number")
    elif op == "*":
        if isinstance(left, int) and isinstance(right, int):
            if left.bit_length() + right.bit_length() > MAX_INT_BITS:
                raise TemplateLimit("the product is too large a number")
        elif isinstance(right, int) and not isinstance(left, (int, float)):
            render.allows(_size(left) * max(right, 0))
        elif isinstance(left, int) and not isinstance(right, (int, float)):
            render.allows(_size(right) * max(left, 0))
    elif op == "+" and not isinstance(left, (int, float)):
        render.allows(_size(left) + _size(right))
    elif op == "%" and isinstance(left, str):
        _check_printf(left, render.max_chars)
    result = _BINOPS[op](left, right)
    if op != "%" or isinstance(left, str):
        render.built(result)
    return result


_BINOPS = {"*": operator.mul, "**": operator.pow, "+": operator.add, "%": operator.mod}


def _bounded_iter(iterable):
    """Every ``{% for %}`` iterates through this: each iteration is a step of the budget."""
    render = _render_state()
    for item in iterable:
        render.step()
        yield item


def _bounded_concat(*parts):
    """``a ~ b ~ c``: the joined length is checked before the string is built."""
    render = _render_state()
    texts = [p if isinstance(p, str) else str(p) for p in parts]
    render.allows(sum(len(t) for t in texts))
    joined = "".join(texts)
    render.built(joined)
    return joined


def _bounded_join(parts):
    """What a block builds (``{% set x %}...{% endset %}``, a macro's body): its length is checked
    before the string is built."""
    parts = list(parts)
    render = _render_state()
    render.allows(sum(len(p) for p in parts))
    joined = "".join(parts)
    render.built(joined)
    return joined


class BoundedNamespace(Namespace):
    """``namespace()``: values kept across loop iterations are bounded like any other."""

    def __setitem__(self, name, value):
        _render_state().built(value)
        super().__setitem__(name, value)


def _guard_callable(func):
    """Filters and tests: refused when their input times their arguments could build a huge value,
    and their result is counted."""

    @wraps(func)
    def guarded(*args, **kwargs):
        render = _render_state()
        values = [a for a in args if not _is_jinja_context(a)] + list(kwargs.values())
        if values:
            head, rest = values[0], values[1:]
            render.allows(_estimate(head, rest, func.__name__), upper_bound=True)
            if isinstance(head, str) and func.__name__ == "do_format":
                _check_printf(head, render.max_chars)
        result = func(*args, **kwargs)
        if isinstance(result, (str, list, tuple, dict)):
            render.built(result)
        else:
            render.step()
        return result

    return guarded


def _is_jinja_context(value) -> bool:
    from jinja2.environment import Environment
    from jinja2.nodes import EvalContext
    from jinja2.runtime import Context

    return isinstance(value, (Context, Environment, EvalContext))


class BoundedSandbox(ImmutableSandboxedEnvironment):
    intercepted_binops = frozenset(_BINOPS)

    def __init__(self, **options):
        super().__init__(**options)
        self.filters = {name: _guard_callable(f) for name, f in self.filters.items()}
        self.tests = {name: _guard_callable(f) for name, f in self.tests.items()}
        self.globals["namespace"] = BoundedNamespace
        self.globals.pop("lipsum", None)  # builds as much text as asked for
        self.skein_iter = _bounded_iter
        self.skein_concat = _bounded_concat
        self.concat = _bounded_join

    def call_binop(self, context, operator_name, left, right):
        return _checked_binop(operator_name, left, right)

    def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 (Jinja's own signature)
        render = _render_state()
        render.step()
        owner = getattr(__obj, "__self__", None)
        if isinstance(owner, (str, list, tuple, dict)) and (args or kwargs):
            render.allows(_estimate(owner, (*args, *kwargs.values()), getattr(__obj, "__name__", "")), upper_bound=True)
        result = super().call(__context, __obj, *args, **kwargs)
        if isinstance(result, (str, list, tuple, dict)):
            render.built(result)
        return result

    def wrap_str_format(self, value):
        """``'...'.format(...)``: widths and precisions are checked before formatting."""
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        template = value.__self__

        def checked(*args, **kwargs):
            _check_format_spec(template, _render_state().max_chars)
            return wrapped(*args, **kwargs)

        return checked


def _bound_loops_and_joins(tree: nodes.Template) -> nodes.Template:
    """Route every loop's iterable and every ``~`` through the environment's bounded helpers (an
    attribute of the environment, which no template can rebind)."""
    for loop in tree.find_all(nodes.For):
        loop.iter = nodes.Call(nodes.EnvironmentAttribute("skein_iter"), [loop.iter], [], None, None, lineno=loop.lineno)
    for concat in list(tree.find_all(nodes.Concat)):
        call = nodes.Call(nodes.EnvironmentAttribute("skein_concat"), list(concat.nodes), [], None, None, lineno=concat.lineno)
        concat.nodes = [call]
    return tree


_jinja = BoundedSandbox(autoescape=False, undefined=StrictUndefined)


@lru_cache(maxsize=1024)
def _compiled(template: str) -> Template:
    """Compiling costs milliseconds and prompts rarely change: each is compiled once per process."""
    return _jinja.from_string(_bound_loops_and_joins(_jinja.parse(template)))


class ModelParams(Params):
    model: str = Field("gpt-4o-mini", min_length=1, max_length=200, description="The model to call")
    provider: int | None = Field(None, ge=1, le=2**63 - 1, description="A stored provider's id; empty uses keys from the environment")
    temperature: float | None = Field(0.7, ge=0, le=2)

    def model_ref(self, max_tokens: int | None = None) -> ModelRef:
        return ModelRef(model=self.model, provider=self.provider, temperature=self.temperature, max_tokens=max_tokens)


def joined_text(inputs: dict[str, list[FlowValue]], port: str = "input") -> str:
    return "\n\n".join(v.text for v in inputs.get(port, []))


def render(template: str, *, input_text: str = "", payload: dict | None = None, messages: list | None = None, **variables) -> str:
    """Render a user-written template in a bounded sandbox: no attribute tricks, no file or module
    access, at most SKEIN_TEMPLATE_MAX_CHARS characters out, within SKEIN_NODE_CPU_BUDGET_S.
    ``variables`` are further names the template sees (a tool's ``args``, a header's ``secrets``)."""
    state = _Render(settings.SKEIN_TEMPLATE_MAX_CHARS, settings.SKEIN_NODE_CPU_BUDGET_S)
    previous = getattr(_current, "render", None)
    _current.render = state
    try:
        parts, produced = [], 0
        for chunk in _compiled(template).generate(input=input_text, payload=payload or {}, messages=messages or [], **variables):
            produced += len(chunk)
            if produced > state.max_chars:
                raise TemplateLimit(f"the template produced more than {state.max_chars:,} characters")
            state.step()
            parts.append(chunk)
        return "".join(parts)
    except TemplateError as exc:
        raise NodeError(f"template error: {exc}") from exc
    except (OverflowError, MemoryError, RecursionError) as exc:
        raise NodeError(f"template error: {type(exc).__name__}: the template went past what it may compute") from exc
    finally:
        _current.render = previous


def template_syntax_error(template: str) -> str | None:
    try:
        _jinja.parse(template)
    except TemplateError as exc:
        return f"template syntax error: {exc}"
    return None
