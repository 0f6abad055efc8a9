"""The conversation tests API (DESIGN.md §9): thin views, input serializer → service/selector → output."""

from __future__ import annotations

from django.conf import settings
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.exceptions import APIException
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from workflows.lookups import found_or_404, thread_or_404, workflow_or_404

from . import files, selectors, services
from .models import ConversationTest, TestRun
from .report import describe_failure, failing_checks

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
    turns = serializers.JSONField(help_text="[{message, expect: [check...], reference?}]; checks as in DESIGN.md §9")


class TestUpdateInput(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    turns = serializers.JSONField(required=False)


class LastResultOutput(serializers.Serializer):
    test_run = serializers.IntegerField()
    version = serializers.JSONField()
    status = serializers.CharField()
    finished = serializers.DateTimeField(allow_null=True)


class TestOutput(serializers.Serializer):
    id = serializers.IntegerField()
    workflow = serializers.IntegerField()
    name = serializers.CharField()
    turns = serializers.JSONField()
    errors = IssueOutput(many=True, help_text="checks naming what the draft does not have: the test cannot run until fixed")
    last = LastResultOutput(allow_null=True)
    created = serializers.DateTimeField()
    updated = serializers.DateTimeField()


def test_data(test: ConversationTest, targets, last=None) -> dict:
    return {
        "id": test.pk,
        "workflow": test.workflow_id,
        "name": test.name,
        "turns": test.turns,
        "errors": selectors.test_errors(test=test, targets=targets),
        "last": None
        if last is None
        else {
            "test_run": last.test_run_id,
            "version": last.test_run.version_label,
            "status": last.status,
            "finished": last.finished,
        },
        "created": test.created,
        "updated": test.updated,
    }


def one_test_data(test: ConversationTest) -> dict:
    targets = selectors.graph_targets(graph=test.workflow.graph, owner_id=test.workflow.owner_id)
    return test_data(test, targets, selectors.last_results(tests=[test]).get(test.pk))


class CheckResultOutput(serializers.Serializer):
    check = serializers.JSONField(help_text="the check as written")
    kind = serializers.CharField()
    passed = serializers.BooleanField(allow_null=True, help_text="null when the check could not be decided (status error)")
    status = serializers.CharField(help_text="passed, failed or error")
    detail = serializers.CharField(help_text="why: the expected text and the reply, the judge's reason, ...")
    sent = serializers.ListField(
        child=serializers.DictField(), required=False, help_text="a failed sent_* check: what the node's model was sent"
    )


class UsageOutput(serializers.Serializer):
    """Tokens and cost: the turns' model calls, their summaries and the judge's."""

    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    cost = serializers.FloatField()


class TurnResultOutput(UsageOutput):
    message = serializers.CharField()
    reply = serializers.CharField(allow_blank=True)
    reference = serializers.CharField(required=False)
    run = serializers.IntegerField()
    status = serializers.CharField()
    error = serializers.CharField(allow_blank=True)
    checks = CheckResultOutput(many=True)


class ResultOutput(UsageOutput):
    id = serializers.IntegerField()
    test = serializers.IntegerField(allow_null=True)
    name = serializers.CharField()
    status = serializers.CharField(help_text=VERDICTS)
    error = serializers.CharField(allow_blank=True)
    thread = serializers.IntegerField(allow_null=True)
    script = serializers.JSONField()
    turns = TurnResultOutput(many=True)
    duration_ms = serializers.IntegerField(allow_null=True)


class TestRunSummaryOutput(UsageOutput):
    id = serializers.IntegerField()
    workflow = serializers.IntegerField()
    status = serializers.CharField(help_text=VERDICTS)
    version = serializers.JSONField(help_text='the version number, or "draft"')
    draft_revision = serializers.IntegerField(allow_null=True)
    purpose = serializers.CharField()
    error = serializers.CharField(allow_blank=True)
    total = serializers.IntegerField()
    passed = serializers.IntegerField()
    failed = serializers.IntegerField()
    errors = serializers.IntegerField(help_text="tests that could not be decided (a judge or a turn failed)")
    created = serializers.DateTimeField()
    started = serializers.DateTimeField(allow_null=True)
    finished = serializers.DateTimeField(allow_null=True)


class TestRunOutput(TestRunSummaryOutput):
    results = ResultOutput(many=True)


def _result_data(result) -> dict:
    return {
        "id": result.pk,
        "test": result.test_id,
        "name": result.name,
        "status": result.status,
        "error": result.error,
        "thread": result.thread_id,
        "script": result.script,
        "turns": result.turns,
        "prompt_tokens": result.prompt_tokens,
        "completion_tokens": result.completion_tokens,
        "cost": result.cost,
        "duration_ms": result.duration_ms,
    }


def test_run_data(test_run: TestRun, *, results: bool = True) -> dict:
    rows = list(test_run.results.all()) if results else None
    data = {
        "id": test_run.pk,
        "workflow": test_run.workflow_id,
        "status": test_run.status,
        "version": test_run.version_label,
        "draft_revision": test_run.draft_revision,
        "purpose": test_run.purpose,
        "error": test_run.error,
        "total": len(rows) if rows is not None else test_run.results.count(),
        "passed": test_run.passed,
        "failed": test_run.failed,
        "errors": test_run.errors,
        "prompt_tokens": test_run.prompt_tokens,
        "completion_tokens": test_run.completion_tokens,
        "cost": test_run.cost,
        "created": test_run.created,
        "started": test_run.started,
        "finished": test_run.finished,
    }
    if rows is not None:
        if not test_run.is_done:  # counts so far, so progress reads right before the run closes
            data["passed"] = sum(r.status == "passed" for r in rows)
            data["failed"] = sum(r.status == "failed" for r in rows)
            data["errors"] = sum(r.status == "error" for r in rows)
        data["results"] = [_result_data(r) for r in rows]
    return data


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
    test_run = serializers.IntegerField()
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
    return found_or_404(selectors.test_get(owner=request.user, test_id=pk), "test")


def _test_run(request, pk) -> TestRun:
    return found_or_404(selectors.test_run_get(owner=request.user, test_run_id=pk), "test run")


class WorkflowTestsView(APIView):
    """A workflow's conversation tests: list them (with their last verdicts) or add one."""

    @extend_schema(responses={200: TestOutput(many=True)})
    def get(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        tests = list(selectors.test_list(owner=request.user, workflow=workflow))
        targets = selectors.graph_targets(graph=workflow.graph, owner_id=workflow.owner_id)
        last = selectors.last_results(tests=tests)
        return Response([test_data(t, targets, last.get(t.pk)) for t in tests])

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
            test_run = services.test_run_create(
                workflow=workflow, version=data.validated_data["version"], test_ids=data.validated_data.get("tests")
            )
        except services.RunRefused as exc:
            raise refused(exc) from None
        return Response({"test_run": test_run.pk, "status": test_run.status}, status=status.HTTP_202_ACCEPTED)


class WorkflowTestRunsView(APIView):
    """A workflow's test runs, newest first (without their results)."""

    @extend_schema(responses={200: TestRunSummaryOutput(many=True)})
    def get(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(selectors.test_run_list(owner=request.user, workflow=workflow), request, view=self)
        return paginator.get_paginated_response([test_run_data(r, results=False) for r in page])


class TestRunDetailView(APIView):
    @extend_schema(responses={200: TestRunOutput})
    def get(self, request, pk: int):
        return Response(test_run_data(_test_run(request, pk)))


class TestRunCompareView(APIView):
    """Two runs side by side (e.g. the draft against the published version): which tests changed
    verdict, and which replies changed."""

    @extend_schema(responses={200: OpenApiResponse(OpenApiTypes.OBJECT, description="a, b, verdicts_changed, replies_changed, tests")})
    def get(self, request, pk: int, other: int):
        a, b = _test_run(request, pk), _test_run(request, other)
        return Response(selectors.test_run_compare(a=a, b=b))


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
        body = files.render(fmt, selectors.test_list(owner=request.user, workflow=workflow))
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
        targets = selectors.graph_targets(graph=workflow.graph, owner_id=workflow.owner_id)
        return Response([test_data(t, targets) for t in tests], status=status.HTTP_201_CREATED)


class TestSettingsView(APIView):
    """The workflow's test settings: "publish only when its tests pass"."""

    @extend_schema(responses={200: SettingsIO})
    def get(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        return Response({"publish_requires_passing": selectors.publish_requires_passing(workflow=workflow)})

    @extend_schema(request=SettingsIO, responses={200: SettingsIO})
    def patch(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        data = SettingsIO(data=request.data)
        data.is_valid(raise_exception=True)
        row = services.test_settings_update(workflow=workflow, **data.validated_data)
        return Response({"publish_requires_passing": row.publish_requires_passing})


# --- the publish gate, for workflows/api/workflows.py's PublishView -----------------------------------
def publish(workflow, *, by=None):
    """Publish through the gate; a refusal is a 400 with the failures."""
    try:
        return services.workflow_publish_gated(workflow=workflow, by=by)
    except services.TestsFailed as exc:
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
