"""The triggers app's part in what happens to a workflow: publishing syncs its webhooks and
schedules, the editor lists them, and deleting it removes them."""

from django.db.models.signals import post_delete
from django.dispatch import receiver

from triggers import services
from workflows.models import Workflow
from workflows.signals import triggers_listed, version_published


@receiver(version_published)
def sync_triggers(sender, workflow, version, **kwargs):
    services.triggers_sync(workflow=workflow, version=version)


@receiver(triggers_listed)
def list_triggers(sender, workflow, base_url, **kwargs) -> list[dict]:
    return services.triggers_of(workflow=workflow, base_url=base_url)


@receiver(post_delete, sender=Workflow)
def remove_schedules(sender, instance, **kwargs):
    """A deleted workflow (directly or with its owner) leaves no periodic tasks behind."""
    services.triggers_remove(workflow_id=instance.pk)
