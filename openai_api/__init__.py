"""The OpenAI-compatible endpoint, one of Skein's surfaces (docs/ecosystem.md): ``/v1/chat/completions``
and ``/v1/models``, published workflows as chat models, answered in OpenAI's shapes.

Modules: ``services`` (the request, the thread it continues, the answer's shapes), ``api`` (the views).
"""
