"""Thin Celery tasks: load by id, hand to the service (imported in the body: no import circle)."""

from celery import shared_task


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def test_run_start(test_run_id: int) -> None:
    from .execution import test_run_start as start

    start(test_run_id=test_run_id)


@shared_task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def test_execute(result_id: int) -> None:
    """One test of a run, its turns in order; safe to deliver twice (one execution at a time)."""
    from .execution import test_execute as execute

    execute(result_id=result_id)
