from django.apps import AppConfig


class TriggersConfig(AppConfig):
    """Webhooks and schedules: publishing syncs them, and they start runs."""

    name = "triggers"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from triggers import signals  # noqa: F401  (publishing and deleting a workflow reach the triggers)
