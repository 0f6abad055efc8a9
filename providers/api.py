"""The providers API: stored providers (the key is write-only), their connection check, their
models and the model a new node gets."""

from django.conf import settings
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.generics import get_object_or_404
from rest_framework.response import Response
from rest_framework.throttling import UserRateThrottle
from rest_framework.views import APIView

from core import netguard
from providers import catalog, diagnosis, selectors, services
from providers.models import Provider


class ProviderInput(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    kind = serializers.ChoiceField(choices=Provider.Kind.choices)
    api_base = serializers.URLField(max_length=500, required=False, allow_blank=True)
    api_key = serializers.CharField(max_length=1000, required=False, allow_blank=True, write_only=True, trim_whitespace=True)

    def validate_api_base(self, value):
        """A base URL that reaches a refused address is refused when it is saved (SECURITY.md)."""
        problem = netguard.url_problem(value) if value else None
        if problem:
            raise serializers.ValidationError(problem)
        return value


class ProviderOutput(serializers.ModelSerializer):
    class Meta:
        model = Provider
        fields = ["id", "name", "kind", "api_base", "has_api_key", "created"]


class ProviderListView(APIView):
    @extend_schema(responses={200: ProviderOutput(many=True)})
    def get(self, request):
        return Response(ProviderOutput(selectors.provider_list(owner=request.user), many=True).data)

    @extend_schema(request=ProviderInput, responses={201: ProviderOutput})
    def post(self, request):
        data = ProviderInput(data=request.data)
        data.is_valid(raise_exception=True)
        provider = services.provider_create(owner=request.user, **data.validated_data)
        return Response(ProviderOutput(provider).data, status=status.HTTP_201_CREATED)


class ProviderDetailView(APIView):
    def _get(self, request, pk):
        return get_object_or_404(selectors.provider_list(owner=request.user), pk=pk)

    @extend_schema(responses={200: ProviderOutput})
    def get(self, request, pk: int):
        return Response(ProviderOutput(self._get(request, pk)).data)

    @extend_schema(request=ProviderInput, responses={200: ProviderOutput})
    def patch(self, request, pk: int):
        provider = self._get(request, pk)
        data = ProviderInput(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        try:
            return Response(ProviderOutput(services.provider_update(provider=provider, **data.validated_data)).data)
        except services.KeyNeededAgain as exc:
            raise serializers.ValidationError({"api_key": str(exc)}) from None

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        services.provider_delete(provider=self._get(request, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)


class ProviderTestInput(serializers.Serializer):
    model = serializers.CharField(max_length=200, required=False, allow_blank=True, help_text="default: a small model of the kind")


class ProviderDraftTestInput(ProviderInput, ProviderTestInput):
    name = serializers.CharField(max_length=100, required=False, allow_blank=True)


class ProviderTestOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    model = serializers.CharField()
    reply = serializers.CharField(required=False)
    reason = serializers.ChoiceField(choices=sorted(diagnosis.EXPLANATIONS), required=False)
    error = serializers.CharField(required=False)
    latency_ms = serializers.IntegerField(required=False)
    prompt_tokens = serializers.IntegerField(required=False)
    completion_tokens = serializers.IntegerField(required=False)
    cost = serializers.FloatField(required=False)


class ConnectionTestThrottle(UserRateThrottle):
    """Each test makes real requests to a server the caller names: a few per minute per user."""

    scope = "provider_test"

    def get_rate(self):
        return f"{settings.SKEIN_PROVIDER_TESTS_PER_MINUTE}/min"


class ProviderTestView(APIView):
    """Test connection: one tiny real call. 200 either way; ``ok`` says whether it worked and
    ``reason`` which of a fixed set of problems it met (``error`` says what to fix). A base URL
    on a refused address is a 400 on ``api_base``; more than a few tests a minute, 429."""

    throttle_classes = [ConnectionTestThrottle]

    @extend_schema(request=ProviderTestInput, responses={200: ProviderTestOutput})
    def post(self, request, pk: int):
        provider = get_object_or_404(selectors.provider_list(owner=request.user), pk=pk)
        data = ProviderTestInput(data=request.data)
        data.is_valid(raise_exception=True)
        problem = netguard.url_problem(provider.api_base) if provider.api_base else None
        if problem:
            raise serializers.ValidationError({"api_base": [problem]})
        return Response(diagnosis.diagnose(provider=provider, model=data.validated_data.get("model", "")))


class ProviderDraftTestView(APIView):
    """Test a provider's settings before saving them (nothing is stored)."""

    throttle_classes = [ConnectionTestThrottle]

    @extend_schema(request=ProviderDraftTestInput, responses={200: ProviderTestOutput}, operation_id="providers_test_draft")
    def post(self, request):
        data = ProviderDraftTestInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        provider = Provider(
            owner=request.user, name=values.get("name") or "draft", kind=values["kind"], api_base=values.get("api_base") or ""
        )
        provider.api_key = values.get("api_key") or ""
        return Response(diagnosis.diagnose(provider=provider, model=values.get("model", "")))


# --- what the editor's model picker reads: the models a provider serves, and a new node's model ---
class ModelListOutput(serializers.Serializer):
    models = serializers.ListField(child=serializers.CharField(), help_text="the models this provider serves")
    error = serializers.CharField(help_text="why the list could not be read (empty when it could)")
    reason = serializers.ChoiceField(
        choices=sorted(diagnosis.EXPLANATIONS), allow_blank=True, help_text="the connection test's reason (empty when it could)"
    )


class ModelListThrottle(ConnectionTestThrottle):
    """A listing asks a server the caller names, like a connection test: as few per minute."""

    scope = "provider_models"


class ProviderModelsView(APIView):
    """The models a provider serves: its server's list (OpenAI-compatible servers, Ollama),
    litellm's chat models (OpenAI, Anthropic), or the bundled model (local). Listings that ask a
    server are rate limited like connection tests (429) and fail with a connection test's reason."""

    @extend_schema(responses={200: ModelListOutput})
    def get(self, request, pk: int):
        provider = get_object_or_404(selectors.provider_list(owner=request.user), pk=pk)
        throttle = ModelListThrottle()
        if catalog.list_reaches_server(provider) and not throttle.allow_request(request, self):
            self.throttled(request, throttle.wait())
        listed = catalog.list_models(provider=provider)
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
        default = catalog.model_default(owner=request.user)
        return Response(ModelDefaultOutput({**default, "environment_models": catalog.list_models(provider=None).models}).data)
