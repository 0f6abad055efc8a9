from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    name = "workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from . import signals, telemetry  # noqa: F401
        from .engine import registry
        from .nodes import NODE_TYPES

        registry.register_all(NODE_TYPES)  # the built-in node types (the engine imports none)

        telemetry.configure()  # OTLP export when OTEL_EXPORTER_OTLP_ENDPOINT is set
