"""The conversation tests API (docs/conversation-tests.md): thin views, input serializer →
service/selector → output. Publishing a workflow is here too: it goes through the tests' gate."""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import APIException
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from conversation_tests import files, selectors, services
from conversation_tests.models import ConversationTest, TestResult, TestRun
from conversation_tests.report import describe_failure, failing_checks
from core.api import found_or_404
from runs.lookups import thread_or_404
from workflows.lookups import workflow_or_404

MAX_ID = 2**63 - 1
VERDICTS = "queued, running, passed, failed or error"


class Rejected(APIException):
    """A refusal whose body is sent as is (DRF would turn its nulls and numbers into strings)."""

    status_code = status.HTTP_400_BAD_REQUEST

    def __init__(self, body: dict, code: int = 400):
        super().__init__()
        self.status_code = code
        self.detail = body


def rejected(exc: services.ScriptInvalid) -> Rejected:
    return Rejected({"detail": str(exc), "errors": exc.issues})


def refused(exc: services.RunRefused) -> Rejected:
    message = str(exc)
    return Rejected({"detail": message, "errors": [{"turn": None, "check": None, "field": exc.field, "message": message}]}, exc.status)


# --- serializers -------------------------------------------------------------------------------------
class IssueOutput(serializers.Serializer):
    turn = serializers.IntegerField(allow_null=True, help_text="index of the turn (0 is the first), or null")
    check = serializers.IntegerField(allow_null=True, help_text="index of the check in that turn's expect, or null")
    field = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class TestInput(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    turns = serializers.JSONField(
        help_text="[{message, expect: [check...], reference?}]; checks as in docs/conversation-tests.md#from-the-api"
    )


class TestUpdateInput(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    turns = serializers.JSONField(required=False)


class LastResultOutput(serializers.Serializer):
    """A test's latest finished result (a ``TestResult``, from ``selectors.last_results``)."""

    test_run = serializers.IntegerField(source="test_run_id")
    version = serializers.JSONField(source="test_run.version_label")
    status = serializers.CharField()
    finished = serializers.DateTimeField(allow_null=True)


class TestOutput(serializers.Serializer):
    """A ``ConversationTest``; the context holds the draft's ``targets`` (what checks may name) and
    the ``last`` results by test id."""

    id = serializers.IntegerField()
    workflow = serializers.IntegerField(source="workflow_id")
    name = serializers.CharField()
    turns = serializers.JSONField()
    errors = serializers.SerializerMethodField(help_text="checks naming what the draft does not have: the test cannot run until fixed")
    last = serializers.SerializerMethodField()
    created = serializers.DateTimeField()
    updated = serializers.DateTimeField()

    @extend_schema_field(IssueOutput(many=True))
    def get_errors(self, test) -> list[dict]:
        return selectors.conversation_test_errors(test=test, targets=self.context["targets"])

    @extend_schema_field(LastResultOutput(allow_null=True))
    def get_last(self, test) -> dict | None:
        last = self.context.get("last", {}).get(test.pk)
        return None if last is None else LastResultOutput(last).data


def conversation_tests_data(tests, workflow, *, last=None) -> list[dict]:
    """Tests of ``workflow`` as ``TestOutput`` shows them (``last``: their latest results, if asked)."""
    targets = selectors.graph_targets(graph=workflow.graph, owner_id=workflow.owner_id)
    return TestOutput(tests, many=True, context={"targets": targets, "last": last or {}}).data


def one_test_data(test: ConversationTest) -> dict:
    targets = selectors.graph_targets(graph=test.workflow.graph, owner_id=test.workflow.owner_id)
    return TestOutput(test, context={"targets": targets, "last": selectors.last_results(tests=[test])}).data


class CheckResultOutput(serializers.Serializer):
    check = serializers.JSONField(help_text="the check as written")
    kind = serializers.CharField()
    passed = serializers.BooleanField(allow_null=True, help_text="null when the check could not be decided (status error)")
    status = serializers.CharField(help_text="passed, failed or error")
    detail = serializers.CharField(help_text="why: the expected text and the reply, the judge's reason, ...")
    sent = serializers.ListField(
        child=serializers.DictField(), required=False, help_text="a failed sent_* check: what the node's model was sent"
    )


def usage_fields() -> tuple[serializers.Field, ...]:
    """Tokens and cost (the turns' model calls, their summaries and the judge's), declared where
    they stand in an output: ``prompt_tokens, completion_tokens, cost = usage_fields()``."""
    return serializers.IntegerField(), serializers.IntegerField(), serializers.FloatField()


class TurnResultOutput(serializers.Serializer):
    message = serializers.CharField()
    reply = serializers.CharField(allow_blank=True)
    reference = serializers.CharField(required=False)
    run = serializers.IntegerField()
    status = serializers.CharField()
    error = serializers.CharField(allow_blank=True)
    checks = CheckResultOutput(many=True)
    prompt_tokens, completion_tokens, cost = usage_fields()


@extend_schema_field(TurnResultOutput(many=True))
class StoredTurnsField(serializers.JSONField):
    """A result's turns as its run stored them (shaped as ``TurnResultOutput``), sent as they are."""


class ResultOutput(serializers.Serializer):
    """A ``TestResult``."""

    id = serializers.IntegerField()
    test = serializers.IntegerField(source="test_id", allow_null=True)
    name = serializers.CharField()
    status = serializers.CharField(help_text=VERDICTS)
    error = serializers.CharField(allow_blank=True)
    thread = serializers.IntegerField(source="thread_id", allow_null=True)
    script = serializers.JSONField()
    turns = StoredTurnsField()
    prompt_tokens, completion_tokens, cost = usage_fields()
    duration_ms = serializers.IntegerField(allow_null=True)


@dataclass
class TestRunProgress:
    """A test run as its outputs show it: with its results read once, the counts so far while it
    runs (so progress reads right before the run closes); without them, the stored counts."""

    test_run: TestRun
    results: list[TestResult] | None = None

    @classmethod
    def with_results(cls, test_run: TestRun) -> TestRunProgress:
        return cls(test_run, list(test_run.results.all()))

    @property
    def total(self) -> int:
        return len(self.results) if self.results is not None else self.test_run.results.count()

    def _count(self, stored: str, verdict: str) -> int:
        if self.results is None or self.test_run.is_done:
            return getattr(self.test_run, stored)
        return sum(r.status == verdict for r in self.results)

    @property
    def passed(self) -> int:
        return self._count("passed", "passed")

    @property
    def failed(self) -> int:
        return self._count("failed", "failed")

    @property
    def errors(self) -> int:
        return self._count("errors", "error")

    def __getattr__(self, name):
        return getattr(self.test_run, name)


class TestRunSummaryOutput(serializers.Serializer):
    """A ``TestRunProgress``."""

    id = serializers.IntegerField()
    workflow = serializers.IntegerField(source="workflow_id")
    status = serializers.CharField(help_text=VERDICTS)
    version = serializers.JSONField(source="version_label", help_text='the version number, or "draft"')
    draft_revision = serializers.IntegerField(allow_null=True)
    purpose = serializers.CharField()
    error = serializers.CharField(allow_blank=True)
    total = serializers.IntegerField()
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    errors = serializers.IntegerField(help_text="tests that could not be decided (a judge or a turn failed)")
    prompt_tokens, completion_tokens, cost = usage_fields()
    created = serializers.DateTimeField()
    started = serializers.DateTimeField(allow_null=True)
    finished = serializers.DateTimeField(allow_null=True)


class TestRunOutput(TestRunSummaryOutput):
    results = ResultOutput(many=True)


def conversation_test_run_data(test_run: TestRun) -> dict:
    return TestRunOutput(TestRunProgress.with_results(test_run)).data


class RunSideOutput(serializers.Serializer):
    id = serializers.IntegerField()
    version = serializers.JSONField(help_text='the version number, or "draft"')
    status = serializers.CharField()
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    errors = serializers.IntegerField()


class CompareOutput(serializers.Serializer):
    """``selectors.test_run_compare``: the two runs, and per test both verdicts and both replies."""

    a = RunSideOutput()
    b = RunSideOutput()
    verdicts_changed = serializers.IntegerField()
    replies_changed = serializers.IntegerField()
    tests = serializers.JSONField(
        help_text="[{test, name, a, b, verdict_changed, replies_changed, turns: [{turn, message, a, b, reply_changed, verdict_changed}]}]"
    )


@extend_schema_field({"oneOf": [{"type": "integer", "minimum": 1}, {"type": "string", "enum": ["draft"]}]})
class VersionField(serializers.Field):
    """A published version's number, or "draft"."""

    def to_internal_value(self, data):
        if data == "draft" or data is None:
            return "draft"
        if isinstance(data, str) and data.isdigit():
            data = int(data)
        if isinstance(data, bool) or not isinstance(data, int) or not 1 <= data <= 2**31 - 1:
            raise serializers.ValidationError('a published version number, or "draft"')
        return data

    def to_representation(self, value):
        return value


class RunInput(serializers.Serializer):
    version = VersionField(required=False, default="draft", help_text='a published version number, or "draft" (the default)')
    tests = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_ID),
        required=False,
        allow_empty=False,
        max_length=settings.SKEIN_TEST_MAX_TESTS_PER_RUN,
        help_text="ids of the tests to run (default: all)",
    )


class RunStartedOutput(serializers.Serializer):
    """A ``TestRun`` just queued."""

    test_run = serializers.IntegerField(source="pk")
    status = serializers.CharField()


class ImportInput(serializers.Serializer):
    format = serializers.ChoiceField(choices=files.FORMATS)
    content = serializers.CharField(max_length=files.MAX_FILE_CHARS, allow_blank=True, trim_whitespace=False)


class ExportQuery(serializers.Serializer):
    format = serializers.ChoiceField(choices=files.FORMATS, default="jsonl")


class SettingsIO(serializers.Serializer):
    publish_requires_passing = serializers.BooleanField(
        help_text="publishing runs every test on the draft first and refuses unless all pass"
    )


class SaveAsTestInput(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True)


# --- views -------------------------------------------------------------------------------------------
def _test(request, pk) -> ConversationTest:
    return found_or_404(selectors.conversation_test_get(owner=request.user, test_id=pk), "test")


def _test_run(request, pk) -> TestRun:
    return found_or_404(selectors.conversation_test_run_get(owner=request.user, test_run_id=pk), "test run")


class WorkflowTestsView(APIView):
    """A workflow's conversation tests: list them (with their last verdicts) or add one."""

    @extend_schema(responses={200: TestOutput(many=True)})
    def get(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        tests = list(selectors.conversation_test_list(owner=request.user, workflow=workflow))
        return Response(conversation_tests_data(tests, workflow, last=selectors.last_results(tests=tests)))

    @extend_schema(request=TestInput, responses={201: TestOutput, 400: OpenApiResponse(description="`errors` keyed by turn and check")})
    def post(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        data = TestInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            test = services.conversation_test_create(workflow=workflow, **data.validated_data)
        except services.ScriptInvalid as exc:
            raise rejected(exc) from None
        return Response(one_test_data(test), status=status.HTTP_201_CREATED)


class TestDetailView(APIView):
    @extend_schema(responses={200: TestOutput})
    def get(self, request, pk: int):
        return Response(one_test_data(_test(request, pk)))

    @extend_schema(request=TestUpdateInput, responses={200: TestOutput})
    def put(self, request, pk: int):
        test = _test(request, pk)
        data = TestUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        fields = {"name": test.name, "turns": test.turns, **data.validated_data}
        try:
            test = services.conversation_test_update(test=test, **fields)
        except services.ScriptInvalid as exc:
            raise rejected(exc) from None
        return Response(one_test_data(test))

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        services.conversation_test_delete(test=_test(request, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class SaveAsTestView(APIView):
    """A test from a real thread: its user messages, each with the reply given then as a reference."""

    @extend_schema(request=SaveAsTestInput, responses={201: TestOutput})
    def post(self, request, pk: int):
        thread = thread_or_404(request, pk)
        data = SaveAsTestInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            test = services.conversation_test_from_thread(thread=thread, name=data.validated_data.get("name"))
        except services.ScriptInvalid as exc:
            raise rejected(exc) from None
        return Response(one_test_data(test), status=status.HTTP_201_CREATED)


class TestRunStartView(APIView):
    """Run the tests (all, or those listed) against the draft or a published version, on Celery."""

    @extend_schema(request=RunInput, responses={202: RunStartedOutput})
    def post(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        data = RunInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            test_run = services.conversation_test_run_create(
                workflow=workflow, version=data.validated_data["version"], test_ids=data.validated_data.get("tests")
            )
        except services.RunRefused as exc:
            raise refused(exc) from None
        return Response(RunStartedOutput(test_run).data, status=status.HTTP_202_ACCEPTED)


class WorkflowTestRunsView(APIView):
    """A workflow's test runs, newest first (without their results)."""

    @extend_schema(responses={200: TestRunSummaryOutput(many=True)})
    def get(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(selectors.conversation_test_run_list(owner=request.user, workflow=workflow), request, view=self)
        return paginator.get_paginated_response(TestRunSummaryOutput([TestRunProgress(r) for r in page], many=True).data)


class TestRunDetailView(APIView):
    @extend_schema(responses={200: TestRunOutput})
    def get(self, request, pk: int):
        return Response(conversation_test_run_data(_test_run(request, pk)))


class TestRunCompareView(APIView):
    """Two runs side by side (e.g. the draft against the published version): which tests changed
    verdict, and which replies changed."""

    @extend_schema(responses={200: CompareOutput})
    def get(self, request, pk: int, other: int):
        a, b = _test_run(request, pk), _test_run(request, other)
        return Response(CompareOutput(selectors.conversation_test_run_compare(a=a, b=b)).data)


class TestsExportView(APIView):
    @extend_schema(
        parameters=[OpenApiParameter("format", str, enum=list(files.FORMATS), required=False)],
        responses={(200, "text/plain"): OpenApiResponse(response={"type": "string"}, description="JSONL or CSV")},
    )
    def get(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        query = ExportQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        fmt = query.validated_data["format"]
        body = files.render(fmt, selectors.conversation_test_list(owner=request.user, workflow=workflow))
        content_type = "application/x-ndjson" if fmt == "jsonl" else "text/csv"
        response = HttpResponse(body, content_type=f"{content_type}; charset=utf-8")
        response["Content-Disposition"] = f'attachment; filename="workflow-{workflow.pk}-tests.{fmt}"'
        return response

    def perform_content_negotiation(self, request, force=False):
        # The answer is the file itself; `?format=` names the file's format, not a DRF renderer.
        from rest_framework.renderers import JSONRenderer

        return JSONRenderer(), JSONRenderer.media_type


class TestsImportView(APIView):
    """Add the tests of a JSONL or CSV file (all of them, or none when any has an error)."""

    @extend_schema(request=ImportInput, responses={201: TestOutput(many=True)})
    def post(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        data = ImportInput(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            parsed = files.parse(data.validated_data["format"], data.validated_data["content"])
            tests = services.conversation_tests_import(workflow=workflow, tests=parsed)
        except files.FileInvalid as exc:
            raise Rejected({"detail": "the file cannot be read; nothing was imported", "errors": exc.issues}) from None
        except services.ScriptInvalid as exc:
            raise rejected(exc) from None
        return Response(conversation_tests_data(tests, workflow), status=status.HTTP_201_CREATED)


class TestSettingsView(APIView):
    """The workflow's test settings: "publish only when its tests pass"."""

    @extend_schema(responses={200: SettingsIO})
    def get(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        return Response(SettingsIO({"publish_requires_passing": selectors.publish_requires_passing(workflow=workflow)}).data)

    @extend_schema(request=SettingsIO, responses={200: SettingsIO})
    def patch(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        data = SettingsIO(data=request.data)
        data.is_valid(raise_exception=True)
        row = services.conversation_test_settings_update(workflow=workflow, **data.validated_data)
        return Response(SettingsIO(row).data)


# --- the publish gate ------------------------------------------------------------------------------
def publish(workflow, *, by=None):
    """Publish through the gate; a refusal is a 400 with the failures."""
    try:
        return services.workflow_publish_gated(workflow=workflow, by=by)
    except services.GateFailed as exc:
        raise Rejected(gate_refusal(exc.test_run)) from None
    except services.RunRefused as exc:
        raise refused(exc) from None


def gate_refusal(test_run: TestRun) -> dict:
    failures, errors = [], []
    for result in test_run.results.all():
        if result.status == "passed":
            continue
        failing = failing_checks(result)
        turn, check = (failing[0][0], failing[0][1]) if failing else (None, None)
        detail = describe_failure(result)
        failures.append(
            {"test": result.test_id, "name": result.name, "status": result.status, "turn": turn, "check": check, "detail": detail}
        )
        errors.append({"node": None, "field": "tests", "message": f"test '{result.name}' {result.status}: {detail}"})
    decided = test_run.passed + test_run.failed + test_run.errors
    if not test_run.is_done:
        detail = "not published: the tests did not finish in time"
    else:
        detail = f"not published: {test_run.failed} of {decided} tests failed" + (
            f" and {test_run.errors} could not be decided" if test_run.errors else ""
        )
    return {"detail": detail, "test_run": test_run.pk, "failures": failures, "errors": errors}


class PublishedOutput(serializers.Serializer):
    version = serializers.IntegerField(source="number", help_text="the number of the version just published")


class PublishView(APIView):
    @extend_schema(request=None, responses={201: PublishedOutput})
    def post(self, request, pk: int):
        version = publish(workflow_or_404(request, pk), by=request.user)  # the tests' publish gate (setting off: a plain publish)
        return Response(PublishedOutput(version).data, status=status.HTTP_201_CREATED)
