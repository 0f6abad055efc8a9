from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.exceptions import NotFound
from rest_framework.response import Response
from rest_framework.views import APIView

from workflows import selectors


class MessageOutput(serializers.Serializer):
    seq = serializers.IntegerField()
    role = serializers.CharField()
    content = serializers.CharField()
    run = serializers.IntegerField(source="run_id", allow_null=True)
    created = serializers.DateTimeField()


def thread_or_404(request, pk):
    thread = selectors.thread_get(owner=request.user, thread_id=pk)
    if thread is None:
        raise NotFound("no such thread")
    return thread


class ThreadMessagesView(APIView):
    """The transcript, oldest first. It is never trimmed."""

    @extend_schema(responses={200: MessageOutput(many=True)})
    def get(self, request, pk: int):
        thread = thread_or_404(request, pk)
        return Response(MessageOutput(selectors.thread_messages(thread=thread), many=True).data)
