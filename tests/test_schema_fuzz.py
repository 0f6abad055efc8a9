"""schemathesis over every operation of /api/schema/: whatever it sends, never a 500."""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings

# Each request commits on its own, so one refused write cannot poison the rest of the run.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def token(user, provider):
    """A user with a provider and a workflow, so that some paths hit real objects."""
    from rest_framework.authtoken.models import Token

    from tests.graphs import chat_graph
    from workflows import services

    services.workflow_create(owner=user, name="fuzzed", graph=chat_graph(provider.pk))
    return Token.objects.create(user=user).key


def test_no_operation_answers_500(token):
    from django.core.wsgi import get_wsgi_application

    schema = schemathesis.openapi.from_wsgi("/api/schema/", get_wsgi_application())
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 25
    failures = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case):
            response = case.call(headers={"Authorization": f"Token {token}"})
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path} -> {response.status_code}: {response.text[:300]}")

        check()
    assert failures == []


def test_deeply_nested_bodies_to_every_operation_are_never_a_500(token):
    """Every operation that takes a body, sent JSON nested far deeper than any request needs."""
    from django.test import Client

    schema = schemathesis.openapi.from_wsgi("/api/schema/", __import__("django.core.wsgi", fromlist=["x"]).get_wsgi_application())
    client = Client()
    sent = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.method.upper() not in ("POST", "PUT", "PATCH"):
            continue
        path = (
            operation.path.replace("{id}", "1")
            .replace("{name}", "mem")
            .replace("{node}", "hook")
            .replace("{token}", "wh_x")
            .replace("{public_key}", "wk_x")
        )
        for depth in (100, 5_000):
            body = "[" * depth + "]" * depth
            response = client.generic(
                operation.method.upper(), path, body, content_type="application/json", HTTP_AUTHORIZATION=f"Token {token}"
            )
            assert response.status_code < 500, (operation.method, path, depth, response.status_code)
            sent += 1
    assert sent >= 20
