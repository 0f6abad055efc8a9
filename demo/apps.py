from django.apps import AppConfig


class DemoConfig(AppConfig):
    """The demo account's workflows and their conversation tests (`make run`)."""

    name = "demo"
    default_auto_field = "django.db.models.BigAutoField"
