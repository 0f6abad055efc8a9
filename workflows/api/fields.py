from django.conf import settings
from rest_framework import serializers
from rest_framework.pagination import LimitOffsetPagination

from workflows.engine.graph import Graph, GraphShapeError


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


def filtered_page(view, request, *, query_class, select, output_class):
    """A list view's answer: query parameters checked by ``query_class``, the rows ``select(**them)``
    returns, one page of them (``limit``, ``offset``) through ``output_class``."""
    query = query_class(data=request.query_params)
    query.is_valid(raise_exception=True)
    paginator = LimitOffsetPagination()
    page = paginator.paginate_queryset(select(owner=request.user, **query.validated_data), request, view=view)
    return paginator.get_paginated_response(output_class(page, many=True).data)
