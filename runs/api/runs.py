"""Runs and their traces: what each node did, and exactly what each model was sent."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api import filtered_page, found_or_404
from runs import selectors
from runs.api.serializers import WarningSerializer
from runs.models import Run

MAX_ID = 2**63 - 1


class RunsQuery(serializers.Serializer):
    workflow = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    trigger = serializers.ChoiceField(choices=Run.Trigger.choices, required=False)
    status = serializers.ChoiceField(choices=Run.Status.choices, required=False)
    thread = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)


class SentMessageOutput(serializers.Serializer):
    role = serializers.CharField()
    content = serializers.CharField(allow_blank=True, allow_null=True)
    tool_calls = serializers.ListField(child=serializers.DictField(), required=False, help_text="an assistant's calls of tools")
    tool_call_id = serializers.CharField(required=False, help_text="the call a tool message answers")


class ToolCallOutput(serializers.Serializer):
    id = serializers.CharField()
    name = serializers.CharField()
    arguments = serializers.CharField(help_text="the JSON the model wrote")
    tool_node = serializers.CharField(allow_null=True, help_text="the tool node that served it (null: no such tool)")
    result = serializers.CharField(allow_blank=True, help_text="what the model was sent back")
    error = serializers.CharField(allow_blank=True)
    duration_ms = serializers.IntegerField()
    details = serializers.DictField()


class RoundOutput(serializers.Serializer):
    messages = SentMessageOutput(many=True, help_text="exactly what the model was sent in this round")
    tools = serializers.ListField(child=serializers.DictField(), help_text="the functions it was offered (OpenAI's tools)")
    tool_choice = serializers.CharField(allow_null=True)
    tool_calls = ToolCallOutput(many=True, help_text="the calls it asked for, with their results")


class StepOutput(serializers.Serializer):
    node = serializers.CharField()
    type = serializers.CharField()
    status = serializers.CharField()
    duration_ms = serializers.IntegerField(allow_null=True)
    input = serializers.CharField()
    output = serializers.CharField()
    error = serializers.CharField()
    details = serializers.DictField()
    messages = SentMessageOutput(many=True, allow_null=True, help_text="exactly what this step's model was sent; null if it called none")
    rounds = RoundOutput(many=True, allow_null=True, help_text="a model that called tools: each round's request and calls")


class RunSummaryOutput(serializers.Serializer):
    id = serializers.IntegerField()
    workflow = serializers.IntegerField(source="workflow_id")
    workflow_name = serializers.CharField(source="workflow.name")
    version = serializers.IntegerField(source="version_id")
    status = serializers.CharField()
    trigger = serializers.CharField()
    thread = serializers.IntegerField(source="thread_id", allow_null=True)
    participant = serializers.IntegerField(source="participant_id", allow_null=True)
    input = serializers.CharField()
    output = serializers.CharField()
    error = serializers.CharField()
    warnings = WarningSerializer(many=True)
    created = serializers.DateTimeField()
    started = serializers.DateTimeField(allow_null=True)
    finished = serializers.DateTimeField(allow_null=True)
    duration_ms = serializers.IntegerField(allow_null=True)
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    cost = serializers.FloatField()


class MemoryCallOutput(serializers.Serializer):
    """A memory's own model call (a summarization, a fact extraction)."""

    node = serializers.CharField(source="memory_node")
    status = serializers.CharField()
    model = serializers.CharField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    duration_ms = serializers.IntegerField()
    error = serializers.CharField()


class SummarizationOutput(MemoryCallOutput):
    from_seq = serializers.IntegerField()
    through_seq = serializers.IntegerField()
    message_count = serializers.IntegerField()
    messages = SentMessageOutput(many=True, help_text="exactly what the summarizer was sent")


class FactExtractionOutput(MemoryCallOutput):
    added = serializers.IntegerField()
    updated = serializers.IntegerField()
    messages = SentMessageOutput(many=True, help_text="exactly what the extracting model was sent")
    reply = serializers.CharField(allow_blank=True, help_text="what it answered")


class RunOutput(RunSummaryOutput):
    steps = StepOutput(many=True)
    summarizations = SummarizationOutput(many=True)
    extractions = FactExtractionOutput(many=True, source="fact_extractions", help_text="memory.facts extraction requests after the turn")


class RunListView(APIView):
    @extend_schema(parameters=[RunsQuery], responses={200: RunSummaryOutput(many=True)})
    def get(self, request):
        return filtered_page(self, request, query_class=RunsQuery, select=selectors.run_list, output_class=RunSummaryOutput)


class RunDetailView(APIView):
    @extend_schema(responses={200: RunOutput})
    def get(self, request, pk: int):
        run = found_or_404(selectors.run_get(owner=request.user, run_id=pk), "run")
        return Response(RunOutput(run).data)
