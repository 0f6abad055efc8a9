from django.apps import AppConfig


class RunsConfig(AppConfig):
    """Conversations and their turns: threads, transcripts, runs and their steps, the turn runtime, waiting, events."""

    name = "runs"
    default_auto_field = "django.db.models.BigAutoField"
