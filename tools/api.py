"""The tools API: the owner's secrets (the value is write-only) and what an MCP server offers (the
editor's list to pick a ``tool.mcp`` node's allowed tools from).

- ``GET/POST /api/secrets/``, ``GET/PUT/DELETE /api/secrets/{id}/``
- ``POST /api/tools/mcp/`` ``{url, secret?}`` → ``{tools: [{name, description, parameters}], error}``
"""

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from core.api import StrictTextField, found_or_404
from engine.registry import NodeError
from tools import mcp, selectors, services

SECRET_NAME = r"^[A-Za-z0-9_.-]{1,100}$"


class SecretInput(serializers.Serializer):
    name = serializers.RegexField(SECRET_NAME, max_length=100, help_text="how tools name it: letters, digits, '_', '.', '-'")
    value = StrictTextField(max_length=10_000, write_only=True, trim_whitespace=False)


class SecretValueInput(serializers.Serializer):
    value = StrictTextField(max_length=10_000, write_only=True, trim_whitespace=False)


class SecretOutput(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    created = serializers.DateTimeField()
    updated = serializers.DateTimeField()


class SecretListView(APIView):
    @extend_schema(responses={200: SecretOutput(many=True)})
    def get(self, request):
        return Response(SecretOutput(selectors.secret_list(owner=request.user), many=True).data)

    @extend_schema(request=SecretInput, responses={201: SecretOutput})
    def post(self, request):
        data = SecretInput(data=request.data)
        data.is_valid(raise_exception=True)
        secret = services.secret_create(owner=request.user, **data.validated_data)
        return Response(SecretOutput(secret).data, status=status.HTTP_201_CREATED)


class SecretDetailView(APIView):
    def _get(self, request, pk):
        return found_or_404(selectors.secret_get(owner=request.user, secret_id=pk), "secret")

    @extend_schema(responses={200: SecretOutput})
    def get(self, request, pk: int):
        return Response(SecretOutput(self._get(request, pk)).data)

    @extend_schema(request=SecretValueInput, responses={200: SecretOutput})
    def put(self, request, pk: int):
        secret = self._get(request, pk)
        data = SecretValueInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(SecretOutput(services.secret_update(secret=secret, value=data.validated_data["value"])).data)

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        services.secret_delete(secret=self._get(request, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class MCPListInput(serializers.Serializer):
    url = serializers.URLField(max_length=2000)
    secret = serializers.RegexField(SECRET_NAME, max_length=100, required=False, allow_null=True, help_text="a stored secret's name")


class MCPToolOutput(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    parameters = serializers.DictField()


class MCPListOutput(serializers.Serializer):
    tools = MCPToolOutput(many=True)
    error = serializers.CharField(allow_blank=True, help_text="why the server could not be listed (empty when it could)")


class MCPListThrottle(UserRateThrottle):
    """Each listing connects to a server the caller names: a few per minute per user."""

    scope = "mcp_list"

    def get_rate(self):
        return f"{settings.SKEIN_PROVIDER_TESTS_PER_MINUTE}/min"


class MCPToolsView(APIView):
    """The tools an MCP server offers (Streamable HTTP), through the network guard."""

    throttle_classes = [MCPListThrottle]

    @extend_schema(request=MCPListInput, responses={200: MCPListOutput})
    def post(self, request):
        data = MCPListInput(data=request.data)
        data.is_valid(raise_exception=True)
        name = data.validated_data.get("secret")
        secret = None
        if name:
            secret = selectors.secret_values(owner_id=request.user.pk, names=[name]).get(name)
            if secret is None:
                raise serializers.ValidationError({"secret": [f"you have no secret named '{name}'"]})
        try:
            tools = mcp.list_tools(url=data.validated_data["url"], secret=secret, timeout=settings.SKEIN_TOOL_LIST_TIMEOUT_S)
        except NodeError as exc:
            return Response(MCPListOutput({"tools": [], "error": str(exc)}).data)
        listed = [{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools]
        return Response(MCPListOutput({"tools": listed, "error": ""}).data)
