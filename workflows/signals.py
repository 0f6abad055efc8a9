from django.db.models.signals import post_delete
from django.dispatch import receiver

from .models import Workflow


@receiver(post_delete, sender=Workflow)
def remove_schedules(sender, instance, **kwargs):
    """A deleted workflow (directly or with its owner) leaves no periodic tasks behind."""
    from .triggers import triggers_remove

    triggers_remove(workflow_id=instance.pk)
