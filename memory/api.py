from django.db import transaction
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from workflows.api.threads import thread_or_404

from . import selectors, services, views
from .runtime import history_key


class MessageIO(serializers.Serializer):
    role = serializers.ChoiceField(choices=["system", "user", "assistant"])
    content = serializers.CharField(max_length=100_000, allow_blank=True, trim_whitespace=False)
    token_count = serializers.IntegerField(read_only=True)


class MemoryOutput(serializers.Serializer):
    name = serializers.CharField()
    node = serializers.CharField()
    type = serializers.CharField()
    history = serializers.CharField()
    summary = serializers.CharField(allow_blank=True)
    summary_through = serializers.IntegerField()
    summarize_next = serializers.BooleanField()
    messages = MessageIO(many=True)
    token_count = serializers.IntegerField()


class ReplaceInput(serializers.Serializer):
    messages = MessageIO(many=True)


class ExportedHistory(serializers.Serializer):
    history = serializers.ChoiceField(choices=["global", "node", "named"])
    name = serializers.CharField(allow_blank=True, max_length=100)
    messages = MessageIO(many=True)


class MemoryExport(serializers.Serializer):
    thread = serializers.IntegerField(read_only=True)
    workflow = serializers.IntegerField(read_only=True)
    histories = ExportedHistory(many=True)


def _history(thread, kind, name, create=True):
    lookup = dict(workflow_id=thread.workflow_id, kind=kind, name=name, key=history_key(key_param="thread", thread_id=thread.pk, run_id=0))
    return services.history_get_or_create(**lookup) if create else selectors.history_find(**lookup)


class ThreadMemoryView(APIView):
    """Each memory of the thread, as its model would see it next."""

    @extend_schema(responses={200: MemoryOutput(many=True)})
    def get(self, request, pk: int):
        thread = thread_or_404(request, pk)
        return Response([views.memory_view(thread, rn) for rn in views.thread_memory_nodes(thread)])


class ThreadMemoryDetailView(APIView):
    """One memory, by memory node id or named-history name: read, replace (resets its summary), clear."""

    def _memory(self, request, pk, name):
        thread = thread_or_404(request, pk)
        rn = views.find_memory(thread, name)
        if rn is None:
            raise NotFound(f"this thread's workflow has no thread-keyed memory '{name}'")
        return thread, rn

    @extend_schema(responses={200: MemoryOutput})
    def get(self, request, pk: int, name: str):
        thread, rn = self._memory(request, pk, name)
        return Response(views.memory_view(thread, rn))

    @extend_schema(request=ReplaceInput, responses={200: MemoryOutput})
    def put(self, request, pk: int, name: str):
        thread, rn = self._memory(request, pk, name)
        data = ReplaceInput(data=request.data)
        data.is_valid(raise_exception=True)
        services.history_replace(history=_history(thread, *views.memory_identity(rn)), messages=data.validated_data["messages"])
        return Response(views.memory_view(thread, rn))

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int, name: str):
        thread, rn = self._memory(request, pk, name)
        services.history_clear(history=_history(thread, *views.memory_identity(rn)))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ThreadMemoryExportView(APIView):
    @extend_schema(responses={200: MemoryExport})
    def get(self, request, pk: int):
        thread = thread_or_404(request, pk)
        exported = []
        for history in selectors.thread_histories(workflow_id=thread.workflow_id, thread_id=thread.pk):
            messages = [{"role": m["role"], "content": m["content"]} for m in selectors.history_all(history=history)]
            exported.append({"history": history.kind, "name": history.name, "messages": messages})
        return Response({"thread": thread.pk, "workflow": thread.workflow_id, "histories": exported})


class ThreadMemoryImportView(APIView):
    """Replace the thread's histories with those of an export (each listed one; others untouched)."""

    @extend_schema(request=MemoryExport, responses={200: MemoryOutput(many=True)})
    def post(self, request, pk: int):
        thread = thread_or_404(request, pk)
        data = MemoryExport(data=request.data)
        data.is_valid(raise_exception=True)
        with transaction.atomic():
            for item in data.validated_data["histories"]:
                name = "" if item["history"] == "global" else item["name"]
                services.history_replace(history=_history(thread, item["history"], name), messages=item["messages"])
        return Response([views.memory_view(thread, rn) for rn in views.thread_memory_nodes(thread)])
