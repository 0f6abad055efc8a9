from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    name = "workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import signals, telemetry  # noqa: F401

        telemetry.configure()  # OTLP export when OTEL_EXPORTER_OTLP_ENDPOINT is set
