from django.apps import AppConfig


class ObservabilityConfig(AppConfig):
    """Metrics (Prometheus) and traces (OpenTelemetry)."""

    name = "observability"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from observability import tracing

        tracing.configure()  # OTLP export when OTEL_EXPORTER_OTLP_ENDPOINT is set
