from rest_framework import serializers

from workflows.engine.graph import Graph, GraphShapeError


class GraphField(serializers.JSONField):
    """A workflow graph: must at least be shaped like one; its semantic issues are reported apart."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        try:
            Graph.parse(value)
        except GraphShapeError as exc:
            raise serializers.ValidationError(str(exc)) from None
        return value


class IssueSerializer(serializers.Serializer):
    node = serializers.CharField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class WarningSerializer(serializers.Serializer):
    node = serializers.CharField(allow_null=True)
    message = serializers.CharField()


class TurnResultSerializer(serializers.Serializer):
    run = serializers.IntegerField()
    thread = serializers.IntegerField(allow_null=True)
    status = serializers.CharField()
    reply = serializers.CharField(allow_blank=True)
    error = serializers.CharField(allow_blank=True)
    warnings = WarningSerializer(many=True)


def turn_result(run) -> dict:
    return {
        "run": run.pk,
        "thread": run.thread_id,
        "status": run.status,
        "reply": run.output,
        "error": run.error,
        "warnings": run.warnings,
    }
