"""Shared steps of the conversation-test tests: create tests and runs through the API, wait for a run."""

from __future__ import annotations

import time

TERMINAL = ("passed", "failed", "error")


def create_test(api, workflow_id: int, turns: list[dict], name: str = "a test", expect: int = 201) -> dict:
    response = api.post(f"/api/workflows/{workflow_id}/tests/", {"name": name, "turns": turns}, format="json")
    assert response.status_code == expect, response.content
    return response.json()


def start_run(api, workflow_id: int, expect: int = 202, **body) -> dict:
    response = api.post(f"/api/workflows/{workflow_id}/tests/run/", body, format="json")
    assert response.status_code == expect, response.content
    return response.json()


def wait_run(api, test_run_id: int, timeout: float = 120) -> dict:
    """The test run once it finished (test runs execute in the background, in any mode)."""
    deadline = time.monotonic() + timeout
    while True:
        run = api.get(f"/api/test-runs/{test_run_id}/").json()
        if run["status"] in TERMINAL:
            return run
        assert time.monotonic() < deadline, f"test run {test_run_id} did not finish in {timeout}s: {run}"
        time.sleep(0.05)


def run_tests(api, workflow_id: int, **body) -> dict:
    return wait_run(api, start_run(api, workflow_id, **body)["test_run"])


def checks_of(run: dict, test_name: str | None = None) -> list[dict]:
    results = [r for r in run["results"] if test_name is None or r["name"] == test_name]
    return [check for result in results for turn in result["turns"] for check in turn["checks"]]
