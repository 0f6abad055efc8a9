"""Threads: the list (with search), one thread (rename, delete), its transcript."""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api import filtered_page
from core.errors import Conflict
from runs import selectors, threads
from runs.lookups import thread_or_404

MAX_ID = 2**63 - 1


class MessageOutput(serializers.Serializer):
    seq = serializers.IntegerField()
    role = serializers.CharField()
    content = serializers.CharField()
    run = serializers.IntegerField(source="run_id", allow_null=True)
    created = serializers.DateTimeField()


class ThreadOutput(serializers.Serializer):
    id = serializers.IntegerField()
    workflow = serializers.IntegerField(source="workflow_id")
    workflow_name = serializers.CharField(source="workflow.name")
    title = serializers.CharField(allow_blank=True)
    key = serializers.CharField(source="external_id", allow_null=True, help_text="the caller's key (webhook `thread`, X-Skein-Thread)")
    source = serializers.SerializerMethodField(help_text="widget, api (a key of the caller's) or chat")
    message_count = serializers.IntegerField(source="last_seq")
    participant = serializers.IntegerField(
        source="participant_id", allow_null=True, help_text="who talks on it (GET /api/participants/{id}/)"
    )
    created = serializers.DateTimeField()
    updated = serializers.DateTimeField()

    def get_source(self, thread) -> str:
        return "widget" if thread.widget_token else "api" if thread.external_id else "chat"


class ThreadsQuery(serializers.Serializer):
    workflow = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    search = serializers.CharField(required=False, max_length=200, help_text="words in the title or any message")


class ThreadRenameInput(serializers.Serializer):
    title = serializers.CharField(max_length=200, allow_blank=True)


class ThreadListView(APIView):
    """Your threads, newest activity first: filter by workflow, search their messages, paginate."""

    @extend_schema(parameters=[ThreadsQuery], responses={200: ThreadOutput(many=True)})
    def get(self, request):
        return filtered_page(self, request, query_class=ThreadsQuery, select=selectors.thread_list, output_class=ThreadOutput)


class ThreadDetailView(APIView):
    """One thread: read, rename, delete (with its transcript, memories and runs)."""

    @extend_schema(responses={200: ThreadOutput})
    def get(self, request, pk: int):
        return Response(ThreadOutput(thread_or_404(request, pk)).data)

    @extend_schema(request=ThreadRenameInput, responses={200: ThreadOutput})
    def patch(self, request, pk: int):
        thread = thread_or_404(request, pk)
        data = ThreadRenameInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(ThreadOutput(threads.thread_rename(thread=thread, title=data.validated_data["title"])).data)

    @extend_schema(responses={204: None, 409: OpenApiResponse(description="a turn is running on the thread")})
    def delete(self, request, pk: int):
        thread = thread_or_404(request, pk)
        try:
            threads.thread_delete(thread=thread)
        except threads.ThreadBusy as exc:
            raise Conflict(str(exc)) from None
        return Response(status=status.HTTP_204_NO_CONTENT)


class ThreadMessagesView(APIView):
    """The transcript, oldest first. It is never trimmed."""

    @extend_schema(responses={200: MessageOutput(many=True)})
    def get(self, request, pk: int):
        thread = thread_or_404(request, pk)
        return Response(MessageOutput(selectors.thread_messages(thread=thread), many=True).data)
