from django.apps import AppConfig


class ConversationTestsConfig(AppConfig):
    """Conversation tests (docs/conversation-tests.md): scripted multi-turn chats with checks, run on Celery."""

    name = "conversation_tests"
    default_auto_field = "django.db.models.BigAutoField"
