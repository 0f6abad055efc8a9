from django.apps import AppConfig


class ChatConfig(AppConfig):
    """The developers' chat API: a message to a workflow and its reply, waited for or streamed (Server-Sent Events)."""

    name = "chat"
    default_auto_field = "django.db.models.BigAutoField"
