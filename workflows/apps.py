from django.apps import AppConfig


class WorkflowsConfig(AppConfig):
    """Workflow definitions: drafts, published versions, the built-in node types, samples, files."""

    name = "workflows"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from engine import registry
        from workflows.nodes import NODE_TYPES

        registry.register_all(NODE_TYPES)  # the built-in node types (the engine imports none)
