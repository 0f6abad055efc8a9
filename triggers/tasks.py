"""The schedules' Celery task: a beat tick of a published schedule."""

from celery import shared_task


# Task names are pinned to those of earlier releases: beat's rows (django-celery-beat) and turns
# still queued in the broker name a task by them, and must reach it after an upgrade.
@shared_task(name="workflows.tasks.fire_schedule", ignore_result=True, soft_time_limit=60, time_limit=90)
def fire_schedule(workflow_id: int, node: str) -> None:
    """A beat tick of a published schedule trigger."""
    from triggers.services import schedule_fire

    schedule_fire(workflow_id=workflow_id, node=node)
