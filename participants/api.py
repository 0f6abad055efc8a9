"""Participants (docs/participants.md): the people talking to the owner's workflows, with their
threads, the memories kept under them and their facts; deleting one forgets them.

- ``GET /api/participants/`` (``?workflow=``, ``?search=``), ``GET/DELETE /api/participants/{id}/``
- ``GET/POST /api/participants/{id}/facts/``, ``GET/PUT/PATCH/DELETE /api/facts/{id}/``
"""

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from core.api import StrictTextField, filtered_page, found_or_404
from core.errors import Conflict
from memory import facts as fact_rules
from memory import facts_services
from memory import selectors as memory_selectors
from memory.keys import participant_key
from participants import selectors as participant_selectors
from participants import services as participants
from workflows import selectors

MAX_ID = 2**63 - 1


class ParticipantOutput(serializers.Serializer):
    id = serializers.IntegerField()
    participant = serializers.CharField(
        source="external_id", help_text="the id the caller named (visitor:… for an anonymous widget visitor)"
    )
    anonymous = serializers.SerializerMethodField(help_text="an anonymous widget visitor (one browser)")
    thread_count = serializers.IntegerField(required=False)
    created = serializers.DateTimeField()
    last_seen = serializers.DateTimeField()

    def get_anonymous(self, participant) -> bool:
        return participant.external_id.startswith(participants.VISITOR_PREFIX)


class FactOutput(serializers.Serializer):
    id = serializers.IntegerField()
    workflow = serializers.IntegerField(source="workflow_id")
    workflow_name = serializers.CharField(source="workflow.name")
    key = serializers.CharField(source="name")
    value = serializers.CharField()
    source = serializers.CharField(help_text="extracted (after a turn) or owner (added or edited by you)")
    source_message = serializers.CharField(allow_blank=True, help_text="the participant's message it came from")
    run = serializers.IntegerField(source="run_id", allow_null=True)
    current = serializers.SerializerMethodField()
    superseded = serializers.DateTimeField(allow_null=True, help_text="when a changed value replaced it (then it is no longer sent)")
    superseded_by = serializers.IntegerField(source="superseded_by_id", allow_null=True)
    created = serializers.DateTimeField()
    updated = serializers.DateTimeField()

    def get_current(self, fact) -> bool:
        return fact.superseded is None


class FactValueField(StrictTextField):
    def __init__(self, **kwargs):
        super().__init__(max_length=fact_rules.MAX_VALUE_CHARS, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if "\x00" in value:
            raise serializers.ValidationError("must not contain NUL characters")
        if not value.strip():
            raise serializers.ValidationError("must not be empty")
        return value


class FactKeyField(StrictTextField):
    def __init__(self, **kwargs):
        super().__init__(max_length=fact_rules.MAX_NAME_CHARS, **kwargs)

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not value.isprintable():
            raise serializers.ValidationError("must not contain control characters")
        return value


class FactCreateInput(serializers.Serializer):
    workflow = serializers.IntegerField(min_value=1, max_value=MAX_ID, help_text="the workflow whose memory.facts keep it")
    key = FactKeyField()
    value = FactValueField()


class FactPutInput(serializers.Serializer):
    key = FactKeyField()
    value = FactValueField()


class FactPatchInput(serializers.Serializer):
    key = FactKeyField(required=False)
    value = FactValueField(required=False)

    def validate(self, data):
        if not data:
            raise serializers.ValidationError("send key and/or value")
        return data


class ParticipantsQuery(serializers.Serializer):
    workflow = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    search = serializers.CharField(required=False, max_length=200, help_text="part of the participant id")


class FactsQuery(serializers.Serializer):
    workflow = serializers.IntegerField(required=False, min_value=1, max_value=MAX_ID)
    current = serializers.BooleanField(required=False, default=False, help_text="only the facts a model is sent")


def _participant(request, pk):
    return found_or_404(participant_selectors.participant_get(owner=request.user, participant_id=pk), "participant")


def _fact(request, pk):
    return found_or_404(memory_selectors.fact_get(owner=request.user, fact_id=pk), "fact")


def _shown(message: dict) -> dict:
    """A history message as the participant's page shows it, its tool round included."""
    shown = {"seq": message["seq"], "role": message["role"], "content": message["content"]}
    if message.get("tool_calls"):
        shown["tool_calls"] = message["tool_calls"]
    if message.get("tool_call_id"):
        shown["tool_call_id"] = message["tool_call_id"]
    return shown


def participant_detail(participant) -> dict:
    threads = [
        {
            "id": t.pk,
            "workflow": t.workflow_id,
            "workflow_name": t.workflow.name,
            "title": t.title,
            "message_count": t.last_seq,
            "updated": t.updated,
        }
        for t in participant_selectors.participant_threads(participant=participant)[:500]
    ]
    memories = []
    for history in memory_selectors.participant_histories(participant_id=participant.pk):
        summaries = []
        for summary in memory_selectors.history_summaries(history=history):
            text, through = memory_selectors.summary_state(history=history, summary=summary)
            summaries.append({"node": summary.memory_node, "text": text, "through_seq": through})
        messages = memory_selectors.history_newest(history=history, count=200)
        memories.append(
            {
                "workflow": history.workflow_id,
                "workflow_name": history.workflow.name,
                "history": history.kind,
                "name": history.name,
                "message_count": history.last_seq - history.replaced_through,
                "messages": [_shown(m) for m in messages],
                "summaries": summaries,
            }
        )
    facts = memory_selectors.participant_facts(participant_id=participant.pk)
    extractions = [
        {
            "id": e.pk,
            "workflow": e.workflow_id,
            "node": e.memory_node,
            "run": e.run_id,
            "status": e.status,
            "model": e.model,
            "added": e.added,
            "updated": e.updated,
            "error": e.error,
            "created": e.created,
        }
        for e in memory_selectors.participant_extractions(participant_id=participant.pk)
    ]
    return {
        **ParticipantOutput(participant).data,
        "thread_count": len(threads),
        "threads": threads,
        "memories": memories,
        "facts": FactOutput(facts, many=True).data,
        "extractions": extractions,
    }


class ParticipantListView(APIView):
    """Your participants, most recently seen first: filter by workflow, search their ids."""

    @extend_schema(parameters=[ParticipantsQuery], responses={200: ParticipantOutput(many=True)})
    def get(self, request):
        return filtered_page(
            self, request, query_class=ParticipantsQuery, select=participant_selectors.participant_list, output_class=ParticipantOutput
        )


class ParticipantDetailView(APIView):
    """One participant: threads, memories kept under them, facts; DELETE forgets them."""

    @extend_schema(responses={200: None})
    def get(self, request, pk: int):
        return Response(participant_detail(_participant(request, pk)))

    @extend_schema(responses={204: None, 409: OpenApiResponse(description="a turn of the participant is running")})
    def delete(self, request, pk: int):
        try:
            participants.participant_delete(participant=_participant(request, pk))
        except participants.ParticipantBusy as exc:
            raise Conflict(str(exc)) from None
        return Response(status=status.HTTP_204_NO_CONTENT)


class ParticipantFactsView(APIView):
    """A participant's facts (superseded ones too, unless ``?current=true``); POST adds one."""

    @extend_schema(parameters=[FactsQuery], responses={200: FactOutput(many=True)})
    def get(self, request, pk: int):
        participant = _participant(request, pk)
        query = FactsQuery(data=request.query_params)
        query.is_valid(raise_exception=True)
        facts = memory_selectors.participant_facts(
            participant_id=participant.pk, workflow_id=query.validated_data.get("workflow"), current_only=query.validated_data["current"]
        )
        return Response(FactOutput(facts[:2000], many=True).data)

    @extend_schema(request=FactCreateInput, responses={201: FactOutput})
    def post(self, request, pk: int):
        participant = _participant(request, pk)
        data = FactCreateInput(data=request.data)
        data.is_valid(raise_exception=True)
        workflow = selectors.workflow_get(owner=request.user, workflow_id=data.validated_data["workflow"])
        if workflow is None:
            raise ValidationError({"workflow": "no such workflow"})
        try:
            fact = facts_services.fact_add(
                workflow_id=workflow.pk,
                key=participant_key(participant.pk),
                participant_id=participant.pk,
                name=_key(data.validated_data["key"]),
                value=data.validated_data["value"],
            )
        except facts_services.FactInputError as exc:
            raise ValidationError({"key": [str(exc)]}) from None
        return Response(FactOutput(fact).data, status=status.HTTP_201_CREATED)


def _key(value: str) -> str:
    name = fact_rules.fact_name(value)
    if not name:
        raise ValidationError({"key": "must not be empty"})
    return name


class FactDetailView(APIView):
    """One fact: read, replace (PUT key and value), edit (PATCH), delete (with the values it superseded)."""

    @extend_schema(responses={200: FactOutput})
    def get(self, request, pk: int):
        return Response(FactOutput(_fact(request, pk)).data)

    @extend_schema(request=FactPutInput, responses={200: FactOutput})
    def put(self, request, pk: int):
        return self._edit(request, pk, FactPutInput)

    @extend_schema(request=FactPatchInput, responses={200: FactOutput})
    def patch(self, request, pk: int):
        return self._edit(request, pk, FactPatchInput)

    def _edit(self, request, pk, input_class):
        fact = _fact(request, pk)
        data = input_class(data=request.data)
        data.is_valid(raise_exception=True)
        name = data.validated_data.get("key")
        try:
            fact = facts_services.fact_edit(
                fact=fact, name=_key(name) if name is not None else None, value=data.validated_data.get("value")
            )
        except facts_services.FactInputError as exc:
            raise ValidationError({"key": [str(exc)]}) from None
        return Response(FactOutput(fact).data)

    @extend_schema(responses={204: None})
    def delete(self, request, pk: int):
        facts_services.fact_delete(fact=_fact(request, pk))
        return Response(status=status.HTTP_204_NO_CONTENT)
