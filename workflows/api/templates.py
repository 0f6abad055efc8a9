"""The workflow list's templates (``workflows/samples.py``), on the model a new node gets here."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from workflows import samples as selectors


class TemplateOutput(serializers.Serializer):
    key = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    graph = serializers.JSONField(
        help_text="React Flow's JSON; nodes that call a model are on the default model (GET /api/providers/default/)"
    )


class TemplateListView(APIView):
    """Starter workflows: create one by posting its name and graph to ``/api/workflows/``."""

    @extend_schema(responses={200: TemplateOutput(many=True)})
    def get(self, request):
        return Response(TemplateOutput(selectors.template_list(owner=request.user), many=True).data)
