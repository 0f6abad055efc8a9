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


@shared_task(ignore_result=True)
def recover_test_runs(older_than_s: float | None = None) -> None:
    """Periodic (beat): take up test runs whose tasks were lost."""
    from .execution import test_runs_recover

    test_runs_recover(**({} if older_than_s is None else {"older_than_s": float(older_than_s)}))
