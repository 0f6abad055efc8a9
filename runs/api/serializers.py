"""A run as the chat surfaces answer with it once its turn is done."""

from rest_framework import serializers


class WarningSerializer(serializers.Serializer):
    node = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class TurnResultSerializer(serializers.Serializer):
    """A run as the chat endpoints answer once its turn is done (or their wait ran out)."""

    run = serializers.IntegerField(source="pk")
    thread = serializers.IntegerField(source="thread_id", allow_null=True)
    status = serializers.CharField()
    reply = serializers.CharField(source="output", allow_blank=True)
    error = serializers.CharField(allow_blank=True)
    warnings = WarningSerializer(many=True)
