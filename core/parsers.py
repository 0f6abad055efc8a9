"""Request body parsers: strict JSON for every API view, raw bytes for the views that sign or store them."""

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import BaseParser, JSONParser

from core.text import BadJSON, parse_json


class StrictJSONParser(JSONParser):
    """JSON that nests at most ``MAX_JSON_DEPTH`` deep, without NUL characters anywhere (no database
    stores them): anything else is a 400 up front, and nothing recurses on request data."""

    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = stream.read().decode(encoding)
        except (UnicodeDecodeError, LookupError) as exc:
            raise ParseError(f"JSON parse error - {exc}") from None
        try:
            return parse_json(text)
        except BadJSON as exc:
            raise ParseError(str(exc)) from None


class RawBodyParser(BaseParser):
    """Leave the body alone: the view reads the raw bytes itself (a webhook signs over them)."""

    media_type = "*/*"

    def parse(self, stream, media_type=None, parser_context=None):
        return None
