from django.apps import AppConfig


class ToolsConfig(AppConfig):
    """Secrets, and the HTTP and MCP clients agents' tools call through."""

    name = "tools"
    default_auto_field = "django.db.models.BigAutoField"
