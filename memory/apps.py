from django.apps import AppConfig


class MemoryConfig(AppConfig):
    """Conversation memory: histories, windows, summaries, facts, and what each model is sent."""

    name = "memory"
    default_auto_field = "django.db.models.BigAutoField"
