"""Providers (issue 7): keys encrypted and never returned, "test connection" with clear errors,
the environment's keys, and token/cost accounting from litellm's usage and price data."""

from __future__ import annotations

import socket

import litellm
import pytest

from engine.interfaces import ModelRef
from providers import llm
from providers.models import Provider
from tests.fakellm import Reply
from tests.graphs import chat_graph

pytestmark = pytest.mark.django_db


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def make_provider(api, **body):
    response = api.post("/api/providers/", {"name": "p", **body}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


# --- keys ---------------------------------------------------------------------------------------
def test_keys_are_encrypted_at_rest_and_never_returned(api):
    created = make_provider(api, kind="openai", api_key="sk-very-secret")
    assert created["has_api_key"] is True and "api_key" not in created
    for answer in (api.get("/api/providers/").json(), api.get(f"/api/providers/{created['id']}/").json()):
        assert "sk-very-secret" not in str(answer)
    stored = Provider.objects.get(pk=created["id"])
    assert "sk-very-secret" not in stored.api_key_encrypted and stored.api_key == "sk-very-secret"


def test_every_kind_can_be_configured(api, fake_llm):
    for kind in ("openai", "anthropic", "ollama", "openai_compatible", "local"):
        assert make_provider(api, kind=kind)["kind"] == kind
    assert api.post("/api/providers/", {"name": "x", "kind": "nonsense"}, format="json").status_code == 400


def test_litellm_targets_per_kind():
    def target(kind, model, api_base="", api_key=""):
        provider = Provider(kind=kind, api_base=api_base)
        provider.api_key = api_key
        return llm.litellm_target(ModelRef(model=model), provider)

    assert target("openai", "gpt-4o-mini", api_key="k") == {"model": "openai/gpt-4o-mini", "api_key": "k"}
    assert target("anthropic", "claude-haiku-4-5") == {"model": "anthropic/claude-haiku-4-5"}
    assert target("ollama", "llama3.2")["model"] == "ollama_chat/llama3.2"
    assert target("openai_compatible", "m", api_base="http://h/v1") == {"model": "openai/m", "api_base": "http://h/v1", "api_key": "none"}
    assert target("local", "smollm2") == {"model": "skein-local/smollm2"}
    assert llm.litellm_target(ModelRef(model="gpt-4o-mini"), None) == {"model": "gpt-4o-mini"}


def test_an_environment_key_is_never_sent_to_a_base_url_someone_typed(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-operator")
    provider = Provider(kind="openai", api_base="http://attacker.invalid/v1")
    provider.api_key = ""
    assert llm.litellm_target(ModelRef(model="gpt-4o-mini"), provider)["api_key"] == "none"
    # without a base URL of its own, litellm takes the key from the environment (no key passed)
    provider.api_base = ""
    assert "api_key" not in llm.litellm_target(ModelRef(model="gpt-4o-mini"), provider)


# --- test connection ----------------------------------------------------------------------------
def test_connection_good(api, provider, fake_llm):
    response = api.post(f"/api/providers/{provider.pk}/test/", {"model": "agent-model"}, format="json")
    assert response.status_code == 200
    answer = response.json()
    assert answer["ok"] is True and answer["model"] == "agent-model" and answer["reply"] == "echo: Reply with one word: pong"
    assert answer["prompt_tokens"] == 11 and answer["completion_tokens"] > 0
    assert fake_llm.requests[-1].body["max_tokens"] == 8


def test_connection_without_a_model_uses_the_servers_first_model(api, provider, fake_llm):
    answer = api.post(f"/api/providers/{provider.pk}/test/", {}, format="json").json()
    assert answer["ok"] is True and answer["model"] == "fake"


def test_connection_wrong_key(api, fake_llm, user):
    fake_llm.responder = lambda request: Reply(status=401, text="Incorrect API key provided: sk-wrong")
    created = make_provider(api, kind="openai", api_base=fake_llm.base_url, api_key="sk-wrong")
    response = api.post(f"/api/providers/{created['id']}/test/", {}, format="json")
    assert response.status_code == 200
    answer = response.json()
    assert answer["ok"] is False and answer["reason"] == "auth" and answer["model"] == "gpt-4o-mini"
    assert "rejected the API key" in answer["error"] and "Incorrect API key provided" in answer["error"]
    assert "AuthenticationError: AuthenticationError" not in answer["error"]
    assert len(fake_llm.requests) == 1  # no retries for a test


def test_connection_unreachable_host(api):
    created = make_provider(api, kind="openai_compatible", api_base=f"http://127.0.0.1:{closed_port()}/v1")
    response = api.post(f"/api/providers/{created['id']}/test/", {"model": "m"}, format="json")
    assert response.status_code == 200
    answer = response.json()
    assert answer["ok"] is False and answer["reason"] == "unreachable" and "could not connect" in answer["error"]


def test_connection_unreachable_ollama_and_anthropic(api):
    port = closed_port()
    for kind, base in (("ollama", f"http://127.0.0.1:{port}"), ("anthropic", f"http://127.0.0.1:{port}")):
        created = make_provider(api, kind=kind, api_base=base, api_key="k")
        answer = api.post(f"/api/providers/{created['id']}/test/", {}, format="json").json()
        assert answer["ok"] is False and answer["reason"] == "unreachable", (kind, answer)


def test_connection_unknown_model(api, provider, fake_llm):
    fake_llm.responder = lambda request: Reply(status=404, text=f"The model `{request.model}` does not exist")
    answer = api.post(f"/api/providers/{provider.pk}/test/", {"model": "gpt-17"}, format="json").json()
    assert answer["ok"] is False and answer["reason"] == "unknown_model"
    assert "does not know this model" in answer["error"] and "gpt-17" in answer["error"]


def test_connection_unknown_local_model(api):
    created = make_provider(api, kind="local")
    answer = api.post(f"/api/providers/{created['id']}/test/", {"model": "gpt-4o-mini"}, format="json").json()
    assert answer["ok"] is False and "smollm2" in answer["error"]


def test_connection_test_before_saving(api, fake_llm):
    body = {"kind": "openai_compatible", "api_base": fake_llm.base_url, "model": "agent-model"}
    answer = api.post("/api/providers/test/", body, format="json").json()
    assert answer["ok"] is True and Provider.objects.count() == 0
    assert api.post("/api/providers/test/", {"kind": "nonsense"}, format="json").status_code == 400


def test_connection_test_of_someone_elses_provider_is_404(other_api, provider):
    assert other_api.post(f"/api/providers/{provider.pk}/test/", {}, format="json").status_code == 404


# --- accounting ---------------------------------------------------------------------------------
def price(model: str, prompt_tokens: int, completion_tokens: int) -> float:
    prompt, completion = litellm.cost_per_token(model=model, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
    return prompt + completion


@pytest.mark.django_db(transaction=True)
def test_cost_per_step_and_run_from_litellms_prices(api, make_workflow, chat, fake_llm):
    openai = make_provider(api, kind="openai", api_base=fake_llm.base_url, api_key="sk-test")
    fake_llm.responder = lambda request: Reply(text="a priced answer", prompt_tokens=1200, completion_tokens=300)
    workflow = make_workflow(chat_graph(openai["id"], model="gpt-4o-mini"))
    turn = chat(workflow["id"], "hello")
    run = api.get(f"/api/runs/{turn['run']}/").json()
    expected = price("gpt-4o-mini", 1200, 300)
    assert expected > 0
    agent = next(s for s in run["steps"] if s["node"] == "agent")
    assert agent["details"]["model"] == "gpt-4o-mini"
    assert (agent["details"]["prompt_tokens"], agent["details"]["completion_tokens"]) == (1200, 300)
    assert agent["details"]["cost"] == pytest.approx(expected)
    assert (run["prompt_tokens"], run["completion_tokens"]) == (1200, 300)
    assert run["cost"] == pytest.approx(expected)


@pytest.mark.django_db(transaction=True)
def test_run_cost_adds_up_over_steps(api, make_workflow, chat, fake_llm):
    """A router and the branch it picks: two priced calls, the run carries their sum."""
    from demo.seed import demo_graphs

    openai = make_provider(api, kind="openai", api_base=fake_llm.base_url, api_key="sk-test")
    graph = dict(demo_graphs(provider=openai["id"], model="gpt-4o-mini"))["Demo: billing router"]
    for node in graph["nodes"]:  # an LLM router instead of the keyword one: one more priced call
        if node["type"] == "router.static":
            node["type"] = "router.llm"
            node["data"] = {
                "model": "gpt-4o-mini",
                "provider": openai["id"],
                "default_route": "general",
                "routes": [{"name": "billing", "description": "billing questions"}, {"name": "general", "description": "the rest"}],
            }
    fake_llm.responder = lambda request: (
        Reply(text="billing", prompt_tokens=100, completion_tokens=2)
        if request.body.get("max_tokens") == 20
        else Reply(text="about your invoice", prompt_tokens=500, completion_tokens=40)
    )
    workflow = make_workflow(graph)
    run = api.get(f"/api/runs/{chat(workflow['id'], 'my invoice is wrong')['run']}/").json()
    priced = [s for s in run["steps"] if s["details"].get("cost")]
    assert [s["node"] for s in priced] == ["route", "billing"]
    assert run["cost"] == pytest.approx(price("gpt-4o-mini", 100, 2) + price("gpt-4o-mini", 500, 40))
    assert (run["prompt_tokens"], run["completion_tokens"]) == (600, 42)


@pytest.mark.django_db(transaction=True)
def test_models_missing_from_the_price_map_cost_zero(chatbot, chat, api, fake_llm):
    fake_llm.responder = lambda request: Reply(text="free", prompt_tokens=50, completion_tokens=5)
    run = api.get(f"/api/runs/{chat(chatbot['id'], 'hi')['run']}/").json()
    assert (run["prompt_tokens"], run["completion_tokens"], run["cost"]) == (50, 5, 0)


def test_anthropic_and_ollama_prices_come_from_litellm():
    assert price("anthropic/claude-haiku-4-5", 1000, 1000) > 0
    assert llm._cost("anthropic/claude-haiku-4-5", 1000, 1000) == pytest.approx(price("anthropic/claude-haiku-4-5", 1000, 1000))
    assert llm._cost("ollama_chat/llama3.2", 1000, 1000) == 0
    assert llm._cost("skein-local/smollm2", 1000, 1000) == 0


def test_error_messages_say_what_to_fix():
    ref = ModelRef(model="m")
    auth = litellm.AuthenticationError(message="AuthenticationError: OpenAIException - bad key", llm_provider="openai", model="m")
    assert llm.describe_error(auth, ref) == "model 'm' failed: the provider rejected the API key (check the key): bad key"
    timeout = litellm.Timeout(message="no complete answer within 3s", model="m", llm_provider="")
    assert llm.error_reason(timeout)[0] == "timeout" and "timed out" in llm.describe_error(timeout, ref)
