"""The workflows API's fields: a graph within its size caps, a problem of a graph."""

from django.conf import settings
from rest_framework import serializers

from engine.graph import Graph, GraphShapeError


class GraphField(serializers.JSONField):
    """A workflow graph: must at least be shaped like one, within the size caps
    (``SKEIN_MAX_GRAPH_NODES``, ``SKEIN_MAX_GRAPH_EDGES``); its semantic issues are reported apart."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if isinstance(value, dict):
            for key, cap in (("nodes", settings.SKEIN_MAX_GRAPH_NODES), ("edges", settings.SKEIN_MAX_GRAPH_EDGES)):
                if isinstance(value.get(key), list) and len(value[key]) > cap:
                    raise serializers.ValidationError(f"a graph may have at most {cap} {key} (this one has {len(value[key])})")
        try:
            Graph.parse(value)
        except GraphShapeError as exc:
            raise serializers.ValidationError(str(exc)) from None
        return value


class IssueSerializer(serializers.Serializer):
    node = serializers.CharField(allow_null=True)
    field = serializers.CharField(allow_null=True)
    message = serializers.CharField()
