"""Workflows: the list, one draft (with its problems and its published triggers), the node types."""

from dataclasses import dataclass
from functools import lru_cache

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.pagination import LimitOffsetPagination
from rest_framework.response import Response
from rest_framework.views import APIView

from engine.registry import all_node_types
from workflows import selectors, services
from workflows.analysis import graph_issues
from workflows.api.fields import GraphField, IssueSerializer
from workflows.lookups import workflow_or_404
from workflows.models import Workflow
from workflows.signals import triggers_listed


class WorkflowListItem(serializers.Serializer):
    """A workflow as lists show it: no validation and no triggers (open one for those)."""

    id = serializers.IntegerField()
    name = serializers.CharField()
    graph = serializers.JSONField()
    revision = serializers.IntegerField()
    published_version = serializers.IntegerField(source="published_version.number", allow_null=True)
    created = serializers.DateTimeField()
    updated = serializers.DateTimeField()


class WorkflowOutput(WorkflowListItem):
    """A workflow as the editor opens it (``workflow_detail``): the draft with its problems."""

    errors = IssueSerializer(many=True)
    unpublished_changes = serializers.BooleanField(
        help_text="the draft differs from the published version (which webhooks, schedules and the widget run)"
    )
    triggers = serializers.ListField(child=serializers.DictField())


@dataclass
class WorkflowDetail:
    """What ``WorkflowOutput`` shows beyond the stored workflow (read through to it)."""

    workflow: Workflow
    errors: list[dict]
    unpublished_changes: bool
    triggers: list[dict]

    def __getattr__(self, name):
        return getattr(self.workflow, name)


def published_triggers(workflow, request) -> list[dict]:
    """The published version's triggers with their URLs, from the apps that serve them."""
    base_url = request.build_absolute_uri("/").rstrip("/")
    answers = triggers_listed.send(sender=Workflow, workflow=workflow, base_url=base_url)
    return [item for _, items in answers for item in items]


def workflow_detail(workflow, request, *, more_errors: list[dict] = ()) -> dict:
    """The editor's view of a workflow: its problems (``more_errors`` first), whether the draft
    differs from the published version, its triggers with their URLs."""
    return WorkflowOutput(
        WorkflowDetail(
            workflow=workflow,
            errors=[*more_errors, *graph_issues(graph=workflow.graph, owner=workflow.owner, workflow_id=workflow.pk)],
            unpublished_changes=selectors.workflow_unpublished_changes(workflow=workflow),
            triggers=published_triggers(workflow, request),
        )
    ).data


class WorkflowCreateInput(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    graph = GraphField(required=False, default=dict)


class WorkflowUpdateInput(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False)
    graph = GraphField(required=False)
    revision = serializers.IntegerField(min_value=1, max_value=2**31 - 1, help_text="The revision this edit is based on (409 when stale)")


class NodeTypeOutput(serializers.Serializer):
    type = serializers.CharField()
    label = serializers.CharField()
    category = serializers.CharField()
    description = serializers.CharField()
    inputs = serializers.ListField(child=serializers.DictField())
    outputs = serializers.ListField(child=serializers.DictField())
    dynamic_outputs = serializers.CharField(allow_null=True)
    is_trigger = serializers.BooleanField()
    summary = serializers.ListField(
        child=serializers.CharField(), help_text='what the editor shows under the title: parts like "{model}" naming a param'
    )
    params_schema = serializers.DictField()


@lru_cache(maxsize=4)
def _described(node_types: tuple) -> list[dict]:
    return NodeTypeOutput([node_type.describe() for node_type in node_types], many=True).data


class NodeTypeListView(APIView):
    @extend_schema(responses={200: NodeTypeOutput(many=True)})
    def get(self, request):
        # Describing the registry (pydantic builds each params JSON Schema) costs more than the rest
        # of the request, and the answer only changes when a node type is registered.
        return Response(_described(tuple(all_node_types())))


class WorkflowListQuery(serializers.Serializer):
    published = serializers.BooleanField(
        required=False, default=False, help_text="only the workflows with a published version (what a workflow tool can call)"
    )


class WorkflowListView(APIView):
    @extend_schema(parameters=[WorkflowListQuery], responses={200: WorkflowListItem(many=True)})
    def get(self, request):
        query = WorkflowListQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        listed = (
            selectors.workflow_published_list(owner=request.user)
            if query.validated_data["published"]
            else selectors.workflow_list(owner=request.user)
        )
        paginator = LimitOffsetPagination()
        page = paginator.paginate_queryset(listed.select_related("published_version"), request, view=self)
        return paginator.get_paginated_response(WorkflowListItem(page, many=True).data)

    @extend_schema(request=WorkflowCreateInput, responses={201: WorkflowOutput})
    def post(self, request):
        data = WorkflowCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        workflow = services.workflow_create(owner=request.user, **data.validated_data)
        return Response(workflow_detail(workflow, request), status=status.HTTP_201_CREATED)


class WorkflowDetailView(APIView):
    @extend_schema(responses={200: WorkflowOutput})
    def get(self, request, pk: int):
        return Response(workflow_detail(workflow_or_404(request, pk), request))

    @extend_schema(request=WorkflowUpdateInput, responses={200: WorkflowOutput, 409: None})
    def put(self, request, pk: int):
        return self._update(request, pk, partial=False)

    @extend_schema(request=WorkflowUpdateInput, responses={200: WorkflowOutput, 409: None})
    def patch(self, request, pk: int):
        return self._update(request, pk, partial=True)

    def _update(self, request, pk, partial):
        workflow = workflow_or_404(request, pk)
        data = WorkflowUpdateInput(data=request.data)
        data.is_valid(raise_exception=True)
        fields = dict(data.validated_data)
        if not partial and "graph" not in fields:
            raise serializers.ValidationError({"graph": "PUT replaces the draft: send the whole graph (or use PATCH)"})
        workflow = services.workflow_update(workflow=workflow, **fields)
        return Response(workflow_detail(workflow, request))

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        services.workflow_delete(workflow=workflow_or_404(request, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)
