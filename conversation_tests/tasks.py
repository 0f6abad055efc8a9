"""Thin Celery tasks: load by id, hand to the service (imported in the body: no import circle)."""

from celery import shared_task


# Task names are pinned to those of earlier releases: beat's rows (django-celery-beat) and turns
# still queued in the broker name a task by them, and must reach it after an upgrade.
@shared_task(name="workflows.conversation_tests.tasks.test_run_start", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def conversation_test_run_start(test_run_id: int) -> None:
    from conversation_tests.execution import conversation_test_run_start as start

    start(test_run_id=test_run_id)


@shared_task(name="workflows.conversation_tests.tasks.test_execute", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def conversation_test_execute(result_id: int) -> None:
    """One test of a run, its turns in order; safe to deliver twice (one execution at a time)."""
    from conversation_tests.execution import conversation_test_execute as execute

    execute(result_id=result_id)


@shared_task(name="workflows.conversation_tests.tasks.recover_test_runs", ignore_result=True)
def recover_test_runs(older_than_s: float | None = None) -> None:
    """Periodic (beat): take up test runs whose tasks were lost."""
    from conversation_tests.execution import conversation_test_runs_recover

    conversation_test_runs_recover(**({} if older_than_s is None else {"older_than_s": float(older_than_s)}))
