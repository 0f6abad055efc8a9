"""A test run reported: where each test went wrong, and JUnit XML for CI systems (one testcase per test)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from conversation_tests.models import TestRun


def failing_checks(result) -> list[tuple[int, int, dict]]:
    """(turn, check, entry) of every check of a result that did not pass."""
    return [
        (t, c, check)
        for t, turn in enumerate(result.turns)
        for c, check in enumerate(turn.get("checks", []))
        if check.get("status") != "passed"
    ]


def describe_failure(result) -> str:
    """One line: where a test first went wrong, and why."""
    failing = failing_checks(result)
    if failing:
        t, c, check = failing[0]
        more = f" (+{len(failing) - 1} more)" if len(failing) > 1 else ""
        return f"turn {t + 1}, check {c + 1} ({check['kind']}): {check['detail']}{more}"
    return result.error or f"the test is {result.status}"


def junit_xml(test_run: TestRun) -> bytes:
    results = list(test_run.results.all())
    seconds = (test_run.finished - test_run.started).total_seconds() if test_run.finished and test_run.started else 0.0
    label = f"{test_run.workflow.name} ({'draft' if test_run.version_number is None else f'v{test_run.version_number}'})"
    counts = {"tests": str(len(results)), "failures": str(test_run.failed), "errors": str(test_run.errors), "time": f"{seconds:.3f}"}
    root = ET.Element("testsuites", {"name": f"Skein: {test_run.workflow.name}", **counts})
    suite = ET.SubElement(
        root, "testsuite", {"name": label, "skipped": "0", **counts, "timestamp": (test_run.started or test_run.created).isoformat()}
    )
    for result in results:
        case = ET.SubElement(
            suite,
            "testcase",
            {"classname": f"skein.workflow{test_run.workflow_id}", "name": result.name, "time": f"{(result.duration_ms or 0) / 1000:.3f}"},
        )
        if result.status in ("failed", "error"):
            lines = [f"turn {t + 1}, check {c + 1} ({check['kind']}): {check['detail']}" for t, c, check in failing_checks(result)]
            if result.error:
                lines.append(result.error)
            element = ET.SubElement(case, "failure" if result.status == "failed" else "error", {"message": describe_failure(result)[:1000]})
            element.text = "\n".join(lines)
        transcript = [f"user: {turn['message']}\nassistant: {turn.get('reply', '')}" for turn in result.turns]
        ET.SubElement(case, "system-out").text = "\n\n".join(transcript)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True)
