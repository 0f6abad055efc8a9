"""What the editor's model picker reads: the models a provider serves, and the model a new node starts with."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.generics import get_object_or_404
from rest_framework.response import Response
from rest_framework.views import APIView

from workflows import llm, selectors


class ModelListOutput(serializers.Serializer):
    models = serializers.ListField(child=serializers.CharField(), help_text="the models this provider serves")
    error = serializers.CharField(help_text="why the list could not be read (empty when it could)")


class ProviderModelsView(APIView):
    """The models a provider serves: its server's list (OpenAI-compatible servers, Ollama),
    litellm's chat models (OpenAI, Anthropic), or the bundled model (local)."""

    @extend_schema(responses={200: ModelListOutput})
    def get(self, request, pk: int):
        provider = get_object_or_404(selectors.provider_list(owner=request.user), pk=pk)
        listed = llm.list_models(provider=provider)
        return Response(ModelListOutput(listed).data)


class ModelDefaultOutput(serializers.Serializer):
    provider = serializers.IntegerField(allow_null=True, help_text="a provider of yours, or null for environment keys")
    model = serializers.CharField()
    environment_models = serializers.ListField(
        child=serializers.CharField(), help_text="models the server's environment keys reach (no provider)"
    )


class ModelDefaultView(APIView):
    """The model a new node starts with here: one of your providers that can be called, else a
    model the server's environment keys reach, else the bundled local model."""

    @extend_schema(responses={200: ModelDefaultOutput})
    def get(self, request):
        default = selectors.model_default(owner=request.user)
        return Response(ModelDefaultOutput({**default, "environment_models": llm.list_models(provider=None).models}).data)
