from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from workflows.text import contains_nul


class StrictJSONParser(JSONParser):
    """JSON without NUL characters anywhere: no database stores them, so they are a 400 up front."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        if contains_nul(data):
            raise ParseError("NUL characters (\\u0000) are not allowed")
        return data
