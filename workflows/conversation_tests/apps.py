from django.apps import AppConfig


class ConversationTestsConfig(AppConfig):
    """Conversation tests (DESIGN.md §9): scripted multi-turn chats with checks, run on Celery."""

    name = "workflows.conversation_tests"
    label = "conversation_tests"
    default_auto_field = "django.db.models.BigAutoField"
