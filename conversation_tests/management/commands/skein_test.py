"""``manage.py skein_test WORKFLOW_ID [--version N|draft] [--junit FILE]``: run a workflow's
conversation tests from the shell (the same test run as the API's), print a line per test as it
finishes and a summary, optionally write JUnit XML, and exit 0 only when every test passed
(1: some failed or could not be decided; 2: the tests could not be run)."""

from __future__ import annotations

import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from conversation_tests import services
from conversation_tests.models import TestRun
from conversation_tests.report import describe_failure, junit_xml
from workflows.analysis import InvalidWorkflow
from workflows.models import Workflow

POLL_S = 0.2
MARKS = {"passed": "PASS ", "failed": "FAIL ", "error": "ERROR"}


def version_arg(value: str):
    if value == "draft":
        return "draft"
    if value.isdigit() and int(value) > 0:
        return int(value)
    raise CommandError(f'--version takes a published version number or "draft", not {value!r}', returncode=2)


class Command(BaseCommand):
    help = "Run a workflow's conversation tests; exit 0 only when all pass."

    def create_parser(self, prog_name, subcommand, **kwargs):
        # --version names the workflow version to test, in place of Django's own --version.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("workflow_id", type=int)
        parser.add_argument("--version", default="draft", help='a published version number, or "draft" (default)')
        parser.add_argument("--junit", metavar="FILE", help="write the results as JUnit XML to FILE")
        parser.add_argument("--test", type=int, action="append", dest="tests", metavar="ID", help="run only this test (repeatable)")
        parser.add_argument("--timeout", type=float, default=None, help="give up after this many seconds (default SKEIN_TEST_GATE_WAIT_S)")

    def handle(self, *args, workflow_id, version, junit, tests, timeout, **options):
        workflow = Workflow.objects.filter(pk=workflow_id).first()
        if workflow is None:
            raise CommandError(f"no workflow {workflow_id}", returncode=2)
        try:
            test_run = services.conversation_test_run_create(
                workflow=workflow, version=version_arg(version), test_ids=tests, purpose=TestRun.Purpose.CLI
            )
        except services.RunRefused as exc:
            raise CommandError(str(exc), returncode=2) from None
        except InvalidWorkflow as exc:
            problems = "; ".join(f"{i['node'] or 'workflow'}: {i['message']}" for i in exc.issues)
            raise CommandError(f"the workflow has errors: {problems}", returncode=2) from None
        label = "the draft" if test_run.version_number is None else f"version {test_run.version_number}"
        total = test_run.results.count()
        self.stdout.write(f"Running {total} test{'s' * (total != 1)} of '{workflow.name}' against {label} (test run {test_run.pk})")

        deadline = time.monotonic() + (settings.SKEIN_TEST_GATE_WAIT_S if timeout is None else timeout)
        shown: set[int] = set()
        while True:
            test_run.refresh_from_db()
            for result in (
                test_run.results.exclude(pk__in=shown).filter(status__in=["passed", "failed", "error"]).order_by("finished", "id")
            ):
                shown.add(result.pk)
                self._line(result)
            if test_run.is_done or time.monotonic() >= deadline:
                break
            time.sleep(POLL_S)

        if not test_run.is_done:
            self.stderr.write(f"gave up waiting: the tests are still running (test run {test_run.pk})")
        summary = (
            f"{total} tests: {test_run.passed} passed, {test_run.failed} failed, {test_run.errors} errors · "
            f"{test_run.prompt_tokens + test_run.completion_tokens} tokens, ${test_run.cost:.4f}"
        )
        self.stdout.write(self.style.SUCCESS(summary) if test_run.status == TestRun.Status.PASSED else self.style.ERROR(summary))
        if junit:
            with open(junit, "wb") as handle:
                handle.write(junit_xml(test_run))
            self.stdout.write(f"JUnit XML: {junit}")
        if test_run.status != TestRun.Status.PASSED:
            sys.exit(1)

    def _line(self, result) -> None:
        seconds = (result.duration_ms or 0) / 1000
        line = f"{MARKS[result.status]} {result.name} ({len(result.turns)} turn{'s' * (len(result.turns) != 1)}, {seconds:.1f} s)"
        if result.status != "passed":
            line += f": {describe_failure(result)}"
        style = self.style.SUCCESS if result.status == "passed" else self.style.ERROR
        self.stdout.write(style(line))
