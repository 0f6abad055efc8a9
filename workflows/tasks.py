from celery import shared_task

from . import runtime, services  # noqa: F401  (runtime imports litellm: pay its import at worker start)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def run_turn(run_id: int) -> None:
    """Thin: load by id and hand to the service. Safe to deliver twice."""
    services.turn_process(run_id=run_id)


@shared_task(ignore_result=True)
def fire_schedule(workflow_id: int, node: str) -> None:
    """A beat tick of a published schedule trigger."""
    from .triggers import schedule_fire

    schedule_fire(workflow_id=workflow_id, node=node)


@shared_task(ignore_result=True)
def recover_turns() -> None:
    """Periodic (beat): re-enqueue turns that no worker is executing any more."""
    services.turns_recover()
