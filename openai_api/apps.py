from django.apps import AppConfig


class OpenAIAPIConfig(AppConfig):
    """The OpenAI-compatible endpoint (/v1): published workflows as chat models."""

    name = "openai_api"
    default_auto_field = "django.db.models.BigAutoField"
