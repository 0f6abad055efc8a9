"""Published versions: the list, a diff between two, restore into the draft."""

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from workflows import services, versions
from workflows.api.workflows import WorkflowOutput, workflow_detail
from workflows.lookups import workflow_or_404


class VersionOutput(serializers.Serializer):
    version = serializers.IntegerField(source="number")
    created = serializers.DateTimeField()
    graph = serializers.JSONField()
    published_by = serializers.CharField(source="published_by.username", allow_null=True, default=None)
    live = serializers.SerializerMethodField(help_text="the published version: what the widget, webhooks and /v1 run")

    def get_live(self, version) -> bool:
        return version.pk == self.context["published_id"]


class RestoreInput(serializers.Serializer):
    revision = serializers.IntegerField(
        required=False, min_value=1, max_value=2**31 - 1, help_text="the draft revision this is based on (409 when stale)"
    )


class VersionListView(APIView):
    """Published versions, newest first, with who published them and when."""

    @extend_schema(responses={200: VersionOutput(many=True)})
    def get(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        listed = versions.version_list(workflow=workflow)
        return Response(VersionOutput(listed, many=True, context={"published_id": workflow.published_version_id}).data)


class VersionRestoreView(APIView):
    """The draft becomes this version's graph (a new revision); publish it to make it live again."""

    @extend_schema(request=RestoreInput, responses={200: WorkflowOutput, 404: OpenApiResponse(description="no such version")})
    def post(self, request, pk: int, number: int):
        workflow = workflow_or_404(request, pk)
        data = RestoreInput(data=request.data or {})
        data.is_valid(raise_exception=True)
        try:
            workflow = services.version_restore(workflow=workflow, number=number, revision=data.validated_data.get("revision"))
        except versions.VersionNotFound as exc:
            raise NotFound(str(exc)) from None
        return Response(workflow_detail(workflow, request))


class VersionDiffView(APIView):
    """What changed from one version to another (``draft`` for the draft): nodes added, removed
    and changed (params; moves apart), edges added and removed."""

    @extend_schema(
        parameters=[
            OpenApiParameter("from", str, description="a version number or `draft` (default: the published version)"),
            OpenApiParameter("to", str, description="a version number or `draft` (default: the draft)"),
        ],
        responses={200: {"type": "object"}, 404: OpenApiResponse(description="no such version")},
    )
    def get(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        published = workflow.published_version.number if workflow.published_version else None
        try:
            before, old = versions.graph_of(workflow=workflow, which=request.query_params.get("from") or published or "draft")
            after, new = versions.graph_of(workflow=workflow, which=request.query_params.get("to") or "draft")
        except versions.BadVersion as exc:
            raise ValidationError({"detail": str(exc)}) from None
        except versions.VersionNotFound as exc:
            raise NotFound(str(exc)) from None
        return Response({"from": before, "to": after, **versions.graph_diff(old, new)})
