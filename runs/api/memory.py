"""The memory inspector's API (docs/api.md#memory): each thread-keyed memory of a thread, as its model
would see it next; replace, clear, edit a summary; export and import with summaries."""

from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api import StrictTextField
from memory import selectors, services, views
from memory.keys import thread_key
from memory.spec import GLOBAL, NAMED, NODE, Summary
from memory.tool_rounds import pairing_problem
from runs import selectors as run_selectors
from runs.lookups import thread_or_404

ROLES = ["system", "user", "assistant", "tool"]


def content_field() -> StrictTextField:
    return StrictTextField(max_length=100_000, allow_blank=True, trim_whitespace=False)


class ToolRoundFields(serializers.Serializer):
    """A message's part in a tool round (OpenAI's shape): an assistant's calls, or the call a
    ``tool`` message answers."""

    tool_calls = serializers.ListField(
        child=serializers.DictField(), required=False, max_length=128, help_text="[{id, type: 'function', function: {name, arguments}}]"
    )
    tool_call_id = serializers.CharField(required=False, max_length=100, help_text="the call this tool result answers")


def paired(messages: list[dict]) -> list[dict]:
    """Messages whose tool calls each have their results (a 400 naming the first broken pair)."""
    if problem := pairing_problem(messages):
        raise serializers.ValidationError(problem)
    return messages


class MessageIO(ToolRoundFields):
    role = serializers.ChoiceField(choices=ROLES)
    content = content_field()
    token_count = serializers.IntegerField(read_only=True)


class MemoryOutput(serializers.Serializer):
    name = serializers.CharField()
    node = serializers.CharField()
    type = serializers.CharField()
    history = serializers.CharField()
    summarizes = serializers.BooleanField(help_text="whether this memory keeps a running summary")
    summary = serializers.CharField(allow_blank=True)
    summary_through = serializers.IntegerField()
    summarize_next = serializers.BooleanField()
    tokenizer = serializers.CharField(help_text="whose tokens token_count counts: the consuming model's tokenizer")
    messages = MessageIO(many=True)
    token_count = serializers.IntegerField()


class ReplaceInput(serializers.Serializer):
    messages = MessageIO(many=True, max_length=100_000)

    def validate_messages(self, messages):
        return paired(messages)


class SummaryEditInput(serializers.Serializer):
    summary = StrictTextField(max_length=100_000, allow_blank=True, trim_whitespace=False)


class ExportedMessage(ToolRoundFields):
    seq = serializers.IntegerField(min_value=1, max_value=2**31 - 1, required=False, help_text="its position when exported")
    role = serializers.ChoiceField(choices=ROLES)
    content = content_field()


class ExportedSummary(serializers.Serializer):
    node = serializers.CharField(max_length=100, help_text="the summarizing memory node")
    text = StrictTextField(max_length=100_000, allow_blank=True, trim_whitespace=False)
    through_seq = serializers.IntegerField(
        min_value=0, max_value=2**31 - 1, help_text="seq of the last exported message it covers (0: none)"
    )


class ExportedHistory(serializers.Serializer):
    history = serializers.ChoiceField(choices=[GLOBAL, NODE, NAMED])
    name = serializers.CharField(allow_blank=True, max_length=100)
    messages = ExportedMessage(many=True, max_length=100_000)
    summaries = ExportedSummary(many=True, required=False, default=list, max_length=100)

    def validate_messages(self, messages):
        return paired(messages)

    def validate(self, data):
        seqs = [m["seq"] for m in data["messages"] if "seq" in m]
        if len(set(seqs)) != len(seqs):
            raise serializers.ValidationError({"messages": "message seqs must be unique"})
        return data


class MemoryExport(serializers.Serializer):
    thread = serializers.IntegerField(read_only=True)
    workflow = serializers.IntegerField(read_only=True)
    histories = ExportedHistory(many=True, max_length=1000)


class ThreadMemoryView(APIView):
    """Each memory of the thread, as its model would see it next."""

    @extend_schema(responses={200: MemoryOutput(many=True)})
    def get(self, request, pk: int):
        thread = thread_or_404(request, pk)
        return Response(
            MemoryOutput(
                [views.memory_view(thread, m) for m in views.thread_memories(run_selectors.thread_graph(thread=thread))], many=True
            ).data
        )


class ThreadMemoryDetailView(APIView):
    """One memory, by memory node id or named-history name: read, replace (resets its summary),
    edit its summary, clear."""

    def _memory(self, request, pk, name):
        thread = thread_or_404(request, pk)
        memory = views.find_memory(run_selectors.thread_graph(thread=thread), name)
        if memory is None:
            raise NotFound(f"this thread's workflow has no thread-keyed memory '{name}'")
        return thread, memory

    @extend_schema(responses={200: MemoryOutput})
    def get(self, request, pk: int, name: str):
        thread, memory = self._memory(request, pk, name)
        return Response(MemoryOutput(views.memory_view(thread, memory)).data)

    @extend_schema(request=ReplaceInput, responses={200: MemoryOutput})
    def put(self, request, pk: int, name: str):
        thread, memory = self._memory(request, pk, name)
        data = ReplaceInput(data=request.data)
        data.is_valid(raise_exception=True)
        history = views.memory_history(thread, memory.spec, create=True)
        tokenizer = views.consumer_tokenizer(thread, memory.binding)
        services.history_replace(history=history, messages=data.validated_data["messages"], tokenizers=(tokenizer,))
        return Response(MemoryOutput(views.memory_view(thread, memory)).data)

    @extend_schema(request=SummaryEditInput, responses={200: MemoryOutput})
    def patch(self, request, pk: int, name: str):
        """Edit the memory's running summary text (its tokens are recounted); the messages it
        covers stay covered."""
        thread, memory = self._memory(request, pk, name)
        data = SummaryEditInput(data=request.data)
        data.is_valid(raise_exception=True)
        if not isinstance(memory.spec.strategy, Summary):
            raise ValidationError({"summary": f"memory '{name}' is a {memory.node_type}: it keeps no summary"})
        services.summary_edit(
            history=views.memory_history(thread, memory.spec, create=True),
            memory_node=memory.spec.node,
            text=data.validated_data["summary"],
            tokenizer=views.consumer_tokenizer(thread, memory.binding),
        )
        return Response(MemoryOutput(views.memory_view(thread, memory)).data)

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int, name: str):
        thread, memory = self._memory(request, pk, name)
        services.history_clear(history=views.memory_history(thread, memory.spec, create=True))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ThreadMemoryExportView(APIView):
    """Every history of the thread, with each message's seq and the summaries of it."""

    @extend_schema(responses={200: MemoryExport})
    def get(self, request, pk: int):
        thread = thread_or_404(request, pk)
        return Response(MemoryExport(selectors.thread_export(workflow_id=thread.workflow_id, thread_id=thread.pk)).data)


class ThreadMemoryImportView(APIView):
    """Replace the thread's histories with those of an export (each listed one; others untouched),
    summaries included. Nothing changes unless all of it can be imported."""

    @extend_schema(request=MemoryExport, responses={200: MemoryOutput(many=True)})
    def post(self, request, pk: int):
        thread = thread_or_404(request, pk)
        data = MemoryExport(data=request.data)
        data.is_valid(raise_exception=True)
        summarizers = {
            (m.spec.node, m.spec.history.kind, m.spec.history.name)
            for m in views.thread_memories(run_selectors.thread_graph(thread=thread))
            if isinstance(m.spec.strategy, Summary)
        }
        items = []
        for index, item in enumerate(data.validated_data["histories"]):
            name = {GLOBAL: ""}.get(item["history"], item["name"])
            for summary in item["summaries"]:
                if (summary["node"], item["history"], name) not in summarizers:
                    raise ValidationError(
                        {
                            "histories": {
                                index: f"summary of '{summary['node']}': this workflow has no summarizing memory of that name on this history"
                            }
                        }
                    )
            items.append((item, name))
        try:
            with transaction.atomic():
                for item, name in items:
                    history = services.history_get_or_create(
                        workflow_id=thread.workflow_id, kind=item["history"], name=name, key=thread_key(thread.pk)
                    )
                    services.history_import(history=history, messages=item["messages"], summaries=item["summaries"])
        except services.MemoryInputError as exc:
            raise ValidationError({"histories": str(exc)}) from None
        return Response(
            MemoryOutput(
                [views.memory_view(thread, m) for m in views.thread_memories(run_selectors.thread_graph(thread=thread))], many=True
            ).data
        )
