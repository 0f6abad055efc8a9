from django.apps import AppConfig


class WidgetConfig(AppConfig):
    """The embeddable chat widget: public keys, visitors, their threads and the widget's socket."""

    name = "widget"
    default_auto_field = "django.db.models.BigAutoField"
