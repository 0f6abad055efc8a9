from django.apps import AppConfig


class ProvidersConfig(AppConfig):
    """Model providers: stored keys, every model call (litellm), model lists, the bundled model, the network guard."""

    name = "providers"
    default_auto_field = "django.db.models.BigAutoField"
