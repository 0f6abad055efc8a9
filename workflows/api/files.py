"""Workflow files: export (``{"skein": 1, "name", "graph"}``) and import."""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from core.parsers import RawBodyParser
from workflows import files
from workflows.api.workflows import WorkflowOutput, workflow_detail
from workflows.lookups import workflow_or_404

MULTIPART_OVERHEAD = 64 * 1024  # form boundaries and headers around an uploaded file


class ExportView(APIView):
    """The workflow's draft as a file: no secrets, no database ids (providers by name and kind)."""

    @extend_schema(
        responses={
            200: {"type": "object", "properties": {"skein": {"type": "integer"}, "name": {"type": "string"}, "graph": {"type": "object"}}}
        }
    )
    def get(self, request, pk: int):
        workflow = workflow_or_404(request, pk)
        response = Response(files.workflow_export(workflow=workflow))
        response["Content-Disposition"] = f'attachment; filename="{files.file_name(workflow.name)}"'
        return response


class ImportView(APIView):
    """A new workflow from a file. Providers are matched by name and kind; what could not be
    mapped is listed in ``errors`` (with the draft's own problems). A file that is not JSON, too
    large, of an unknown format version or with unknown node types: 400, nothing created."""

    parser_classes = [RawBodyParser]

    @extend_schema(
        request={
            "application/json": {"type": "object"},
            "multipart/form-data": {"type": "object", "properties": {"file": {"type": "string", "format": "binary"}}},
        },
        parameters=[OpenApiParameter("name", str, description="a name for the new workflow (default: the file's)")],
        responses={201: WorkflowOutput, 400: OpenApiResponse(description="the file cannot be imported (`detail` says why)")},
    )
    def post(self, request):
        declared = request.META.get("CONTENT_LENGTH") or "0"
        if declared.isdigit() and int(declared) > settings.SKEIN_IMPORT_MAX_BYTES + MULTIPART_OVERHEAD:
            return _refused(f"the file is larger than workflow files are limited to ({settings.SKEIN_IMPORT_MAX_BYTES} bytes)")
        try:
            if (request.content_type or "").startswith("multipart/form-data"):  # an uploaded file (any field name)
                upload = next(iter(request._request.FILES.values()), None)
                if upload is None:
                    return _refused("send the workflow file as the request body, or as a file in a multipart upload")
                body = upload.read(settings.SKEIN_IMPORT_MAX_BYTES + 1)
            else:
                body = request.body
        except RequestDataTooBig:
            return _refused("the file is too large")
        try:
            data = files.file_parse(body)
        except files.FileRefused as exc:
            return _refused(exc.message)
        name = (request.query_params.get("name") or "").strip()[:200] or None
        workflow, unmapped = files.workflow_import(owner=request.user, data=data, name=name)
        return Response(workflow_detail(workflow, request, more_errors=unmapped), status=status.HTTP_201_CREATED)


def _refused(message: str) -> Response:
    return Response({"detail": message, "errors": [{"node": None, "field": "file", "message": message}]}, status=400)
