"""Daily spend limits of a workflow, and today's use (runs/limits.py)."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from runs import limits
from workflows.lookups import workflow_or_404


class LimitSerializer(serializers.Serializer):
    tokens = serializers.IntegerField(
        required=False, allow_null=True, min_value=1, max_value=10**12, help_text="tokens a day (prompt + completion)"
    )
    cost = serializers.FloatField(required=False, allow_null=True, min_value=0, max_value=10**6, help_text="US dollars a day")


class UsageSerializer(serializers.Serializer):
    tokens = serializers.IntegerField()
    cost = serializers.FloatField()
    runs = serializers.IntegerField()
    refused = serializers.IntegerField(help_text="turns refused by a limit today")


class LimitsInput(serializers.Serializer):
    workflow = LimitSerializer(required=False, allow_null=True, help_text="every run of the workflow together")
    visitor = LimitSerializer(required=False, allow_null=True, help_text="each widget visitor (by client address)")
    caller = LimitSerializer(required=False, allow_null=True, help_text="each OpenAI-endpoint caller (by the request's `user`)")


class LimitsOutput(serializers.Serializer):
    workflow = LimitSerializer()
    visitor = LimitSerializer()
    caller = LimitSerializer()
    today = UsageSerializer(help_text="the workflow's use since midnight UTC")
    day_started = serializers.DateTimeField()


def limits_data(workflow) -> dict:
    return LimitsOutput(
        {**limits.limits_of(workflow), "today": limits.usage_today(workflow_id=workflow.pk), "day_started": limits.day_start()}
    ).data


class LimitsView(APIView):
    """Daily limits in tokens or cost, per workflow, per widget visitor and per /v1 caller; a turn
    that would pass one is refused before any model call."""

    @extend_schema(responses={200: LimitsOutput})
    def get(self, request, pk: int):
        return Response(limits_data(workflow_or_404(request, pk)))

    @extend_schema(request=LimitsInput, responses={200: LimitsOutput})
    def patch(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        data = LimitsInput(data=request.data)
        data.is_valid(raise_exception=True)
        return Response(limits_data(limits.limits_update(workflow=workflow, limits=data.validated_data)))
