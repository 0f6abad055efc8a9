from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.generics import get_object_or_404
from rest_framework.response import Response
from rest_framework.views import APIView

from workflows import llm, selectors, services
from workflows.models import Provider



class ProviderInput(serializers.Serializer):
    name = serializers.CharField(max_length=100)
    kind = serializers.ChoiceField(choices=Provider.Kind.choices)
    api_base = serializers.URLField(max_length=500, required=False, allow_blank=True)
    api_key = serializers.CharField(max_length=1000, required=False, allow_blank=True, write_only=True, trim_whitespace=True)


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
        return Response(ProviderOutput(services.provider_update(provider=provider, **data.validated_data)).data)

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        self._get(request, pk).delete()
        return Response(status=status.HTTP_204_NO_CONTENT)


class ProviderTestInput(serializers.Serializer):
    model = serializers.CharField(max_length=200, required=False, allow_blank=True, help_text="default: a small model of the kind")


class ProviderDraftTestInput(ProviderInput, ProviderTestInput):
    name = serializers.CharField(max_length=100, required=False, allow_blank=True)


class ProviderTestOutput(serializers.Serializer):
    ok = serializers.BooleanField()
    model = serializers.CharField()
    reply = serializers.CharField(required=False)
    reason = serializers.CharField(required=False, help_text="auth, unknown_model, unreachable, timeout, rate_limited, ...")
    error = serializers.CharField(required=False)
    latency_ms = serializers.IntegerField(required=False)
    prompt_tokens = serializers.IntegerField(required=False)
    completion_tokens = serializers.IntegerField(required=False)
    cost = serializers.FloatField(required=False)


class ProviderTestView(APIView):
    """Test connection: one tiny real call. 200 either way; ``ok`` says whether it worked and
    ``error`` says what to fix (wrong key, unreachable host, unknown model)."""

    @extend_schema(request=ProviderTestInput, responses={200: ProviderTestOutput})
    def post(self, request, pk: int):
        provider = get_object_or_404(selectors.provider_list(owner=request.user), pk=pk)
        data = ProviderTestInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(llm.connection_test(provider=provider, model=data.validated_data.get("model", "")))


class ProviderDraftTestView(APIView):
    """Test a provider's settings before saving them (nothing is stored)."""

    @extend_schema(request=ProviderDraftTestInput, responses={200: ProviderTestOutput})
    def post(self, request):
        data = ProviderDraftTestInput(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        provider = Provider(owner=request.user, name=values.get("name") or "draft", kind=values["kind"], api_base=values.get("api_base") or "")
        provider.api_key = values.get("api_key") or ""
        return Response(llm.connection_test(provider=provider, model=values.get("model", "")))
