"""The demo workflows ship with conversation tests (issue 17): seeded with each demo, and passing,
on the fake server and on the bundled local model for real (SmolLM2-135M, short replies)."""

from __future__ import annotations

import pytest

from demo import seed as demo
from demo.conversation_tests import DEMO_TESTS
from tests.conversation_helpers import run_tests
from workflows.models import Workflow

pytestmark = pytest.mark.django_db(transaction=True)


def seed(user, provider):
    return demo.demo_seed(owner=user, model={"provider": provider.pk, "model": "agent-model"})


def test_every_demo_ships_with_tests(user, provider):
    workflows = seed(user, provider)
    assert {w.name for w in workflows} == set(DEMO_TESTS)
    for workflow in workflows:
        tests = list(workflow.conversation_tests.all())
        assert len(tests) >= 1 and {t.name for t in tests} == {name for name, _ in DEMO_TESTS[workflow.name]}


def test_the_demo_tests_pass_on_the_fake_server(api, user, monkeypatch, fake_llm, provider):
    for workflow in seed(user, provider):
        run = run_tests(api, workflow.pk)
        assert run["status"] == "passed", (
            workflow.name,
            [(r["name"], r["error"], [c for t in r["turns"] for c in t["checks"] if not c["passed"]]) for r in run["results"]],
        )


def test_the_demo_tests_pass_with_the_bundled_local_model(api, user, monkeypatch):
    """For real, on llama.cpp; replies cut to a few tokens to stay short (the checks read what each
    model was sent and what memory kept, not how long the replies are)."""
    monkeypatch.setattr(demo, "REPLY_TOKENS", 12)
    provider, _ = demo.local_provider_get_or_create(owner=user)
    workflows = demo.demo_seed(owner=user)  # the installation's default: the local model, no key
    assert {n["data"]["provider"] for w in workflows for n in w.graph["nodes"] if "provider" in n["data"]} == {provider.pk}
    assert Workflow.objects.filter(owner=user).count() == len(DEMO_TESTS)
    for workflow in workflows:
        run = run_tests(api, workflow.pk, timeout=600)
        failures = [
            (r["name"], r["error"], [c["detail"] for t in r["turns"] for c in t["checks"] if not c["passed"]])
            for r in run["results"]
            if r["status"] != "passed"
        ]
        assert run["status"] == "passed", (workflow.name, failures)
