from django.apps import AppConfig


class ParticipantsConfig(AppConfig):
    """The people talking to a workflow: who they are, what is remembered of them, forgetting them."""

    name = "participants"
    default_auto_field = "django.db.models.BigAutoField"
