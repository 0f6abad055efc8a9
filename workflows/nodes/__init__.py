"""Skein's node types, one module per family; importing this package registers them all."""

from . import llm, memory, output, router, template, triggers  # noqa: F401
