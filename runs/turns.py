"""The turn: one run executed, with its thread's queue drained in order.

``turn_process`` takes the thread's turn lock and runs every queued turn of the thread;
``run_execute`` executes one (the engine, through ``runtime.TurnRuntime``), and ``_finish``
records the outcome, the transcript and the memory at once. Tasks call in here; nothing here
enqueues a task (``runs`` does).
"""

from __future__ import annotations

import logging
import threading

from django.db import connections, transaction
from django.utils import timezone

from core.backends import backend
from core.text import storable, storable_json
from engine.executor import RunFailed, execute
from engine.registry import FlowValue, NodeError
from memory import services as memory_services
from observability import metrics
from observability import tracing as telemetry
from runs import events, limits, locks, services, threads, waiting
from runs.models import Message, Run, RunStep, Thread
from workflows.analysis import version_analysis
from workflows.models import Workflow

logger = logging.getLogger("skein.runs")

MAX_ATTEMPTS = 3


def turn_process(*, run_id: int) -> None:
    """Run this run's turn, and every earlier or later queued turn of its thread, in order.

    One caller at a time holds the thread's turn lock and drains the thread's queue; a caller that
    finds the lock taken leaves, since the holder re-checks the queue after releasing it.

    In the embedded mode the caller is the request that sent the message (turns run eagerly): it
    answers as soon as its own turn is done, and hands the turns queued behind it to a background
    thread, whose requests are waiting for their own runs (``waiting.wait_for_run``)."""
    run = Run.objects.filter(pk=run_id).only("id", "thread_id", "status").first()
    if run is None or run.is_done:
        return
    scope = locks.turn_scope(run)
    # A run already RUNNING was started by someone: a redelivered task whose worker died, whose
    # lock frees itself within its TTL (full mode). Wait for it rather than leave the turn orphaned.
    wait_s = locks.takeover_wait_s() if run.status == Run.Status.RUNNING else 0.0
    while True:
        with locks.try_turn_lock(*scope, wait_s=wait_s) as lock:
            if not lock:
                return
            while not lock.lost and (next_id := _next_in_queue(run, scope)) is not None:
                try:
                    run_execute(run_id=next_id)
                except TurnSuperseded:
                    logger.warning("run %s: taken over by another holder of its turn lock; its outcome is theirs", next_id)
                    return
                if backend().turns_in_request and next_id >= run.pk:
                    break
            if lock.lost:
                return  # the lock's new holder drains the queue
        wait_s = 0.0
        following = _next_in_queue(run, scope)
        if following is None:
            return
        if backend().turns_in_request:
            _drain_in_background(following)
            return


def _drain_in_background(run_id: int) -> None:
    def drain() -> None:
        try:
            turn_process(run_id=run_id)
        except Exception:  # the run stays queued; start-up recovery or the next message takes it
            logger.exception("run %s: the queued turn could not run", run_id)
        finally:
            connections.close_all()

    threading.Thread(target=drain, name=f"skein-turns-{run_id}", daemon=True).start()


def _next_in_queue(run: Run, scope) -> int | None:
    pending = (Run.Status.QUEUED, Run.Status.RUNNING)
    if scope[0] == locks.THREAD_SCOPE:
        query = Run.objects.filter(thread_id=run.thread_id, status__in=pending)
    else:
        query = Run.objects.filter(pk=run.pk, status__in=pending)
    return query.order_by("id").values_list("id", flat=True).first()


class TurnSuperseded(Exception):
    """The run was taken over (its ``attempts`` moved on) while this caller executed it: this
    caller lost its turn lock, and the new holder's outcome is the one recorded."""


def run_execute(*, run_id: int) -> None:
    """Execute one run; the caller holds its turn lock. A run found RUNNING was interrupted (its
    worker died): its partial steps and memory entries are dropped and it runs again."""
    from runs.runtime import TurnRuntime  # litellm is imported on first use, not by importing this module

    def runtime_of(run):
        return TurnRuntime(run, workflow_turn=workflow_tool_turn)

    with transaction.atomic():
        run = Run.objects.select_for_update(of=("self",)).select_related("workflow", "version", "thread").get(pk=run_id)
        if run.is_done:
            return
        if run.status == Run.Status.RUNNING:
            RunStep.objects.filter(run=run).delete()
            memory_services.run_entries_discard(run_id=run.pk)
            if run.attempts >= MAX_ATTEMPTS:
                _finish(run, error=f"the turn was interrupted {run.attempts} times; giving up", runtime=runtime_of(run))
                return
        run.status = Run.Status.RUNNING
        run.attempts += 1
        run.started = timezone.now()
        run.save(update_fields=["status", "attempts", "started"])
        if run.thread_id and run.input and not (run.attempts > 1 and run.messages.filter(role=Message.Role.USER).exists()):
            _transcript_append(run, role=Message.Role.USER, content=run.input)  # once, also when re-run
        events.publish(events.RUN_STARTED, {"trigger": run.trigger, "thread": run.thread_id}, run_id=run.pk, thread_id=run.thread_id)

    refusal = limits.turn_refusal(run=run)  # before any model call; its warning goes on the run
    runtime = runtime_of(run)
    if refusal is not None:
        _finish(run, error=refusal, runtime=runtime)
        return
    try:
        result = execute(version_analysis(run.version), trigger_id=run.trigger_node, input_value=FlowValue(run.input), services=runtime)
    except RunFailed as exc:
        _finish(run, error=exc.message if not exc.node_id else f"{exc.node_id}: {exc.message}", runtime=runtime)
    except Exception as exc:  # never leave a run RUNNING because of a bug: fail it, loudly
        logger.exception("run %s crashed", run.pk)
        _finish(run, error=f"internal error: {type(exc).__name__}: {exc}", runtime=runtime)
    else:
        runtime.memory.after_turn()  # memory.facts learn from the turn (bounded; a failure only warns)
        _finish(run, reply=result.reply, cut=result.cut, runtime=runtime)


def _finish(run: Run, *, runtime, reply: str = "", error: str = "", cut: bool = False) -> None:
    """Record the outcome, the reply in the transcript and the turn in the memory, at once.

    Fenced: the run's row is updated only if its ``attempts`` is still the one this execution
    started with and it is not done (the update also locks the row until the commit); otherwise
    someone took the turn over and nothing of this execution is written (``TurnSuperseded``)."""
    with transaction.atomic():
        run.status = Run.Status.FAILED if error else Run.Status.SUCCEEDED
        run.output = storable(reply)
        run.error = storable(error)
        run.finished = timezone.now()
        run.warnings = storable_json(runtime.warnings)
        run.prompt_tokens = runtime.prompt_tokens
        run.completion_tokens = runtime.completion_tokens
        run.cost = runtime.cost
        fields = ("status", "output", "error", "finished", "warnings", "prompt_tokens", "completion_tokens", "cost")
        current = Run.objects.filter(pk=run.pk, attempts=run.attempts, status=Run.Status.RUNNING)
        if not current.update(**{name: getattr(run, name) for name in fields}):
            raise TurnSuperseded(run.pk)
        runtime.steps_save()
        if run.thread_id and reply:
            _transcript_append(run, role=Message.Role.ASSISTANT, content=reply)
        runtime.memory.turn_finished(user_text=run.input, reply=reply)
        if error:
            events.publish(events.RUN_FAILED, {"error": error}, run_id=run.pk, thread_id=run.thread_id)
        else:
            events.publish(
                events.RUN_FINISHED, {"reply": reply, "warnings": run.warnings, "cut": cut}, run_id=run.pk, thread_id=run.thread_id
            )
        metrics.turn_finished(run=run)
        telemetry.run_finished(run=run, runtime=runtime)

        # robust: Redis being down must not abort the thread's turn loop after the run was stored
        # (the turns queued behind it would wait for recover_turns); waiters re-read the database.
        transaction.on_commit(lambda: waiting.signal_run_done(run.pk, outcome=run), robust=True)


def _transcript_append(run: Run, *, role: str, content: str) -> Message:
    """Append to the run's thread; the caller holds the thread's turn lock, so no one else appends
    meanwhile (the conditional update proves it, rather than trusting it)."""
    seq = run.thread.last_seq + 1
    moved = Thread.objects.filter(pk=run.thread_id, last_seq=seq - 1).update(last_seq=seq, updated=timezone.now())
    if not moved:
        raise RuntimeError(f"thread {run.thread_id} was appended to by someone else during run {run.pk}")
    run.thread.last_seq = seq
    return Message.objects.create(thread_id=run.thread_id, seq=seq, role=role, content=storable(content), run=run)


MAX_TOOL_DEPTH = 3  # workflows calling workflows as tools, at most this deep (cycles are refused when saved)


def workflow_tool_turn(*, parent: Run, tool_node: str, workflow_id: int, message: str, timeout: float) -> Run:
    """A ``tool.workflow`` call: a turn of another published workflow of the same owner, executed
    here, on a thread of its own per calling thread and tool (so the called agent keeps its own
    memory of the conversation), for the same participant and spender. Returns the finished run."""
    workflow = Workflow.objects.filter(pk=workflow_id, owner_id=parent.workflow.owner_id).select_related("published_version").first()
    if workflow is None or workflow.published_version is None:
        raise NodeError(f"workflow {workflow_id} is not one of your published workflows")
    depth = int((parent.payload or {}).get("tool_depth", 0)) + 1
    if depth > MAX_TOOL_DEPTH:
        raise NodeError(f"workflows call each other as tools more than {MAX_TOOL_DEPTH} deep")
    caller = f"thread-{parent.thread_id}" if parent.thread_id else f"run-{parent.pk}"
    with transaction.atomic():
        thread, _ = threads.thread_for_key(
            workflow=workflow, key=f"tool:{parent.workflow_id}:{tool_node}:{caller}"[:200], title=f"called by {tool_node}"[:80]
        )
        run = services.run_create(
            version=workflow.published_version,
            trigger="chat",
            input_text=message,
            thread=thread,
            payload={"source": "tool", "parent_run": parent.pk, "tool_depth": depth},
            spender=parent.spender,
            participant=parent.participant,
            enqueue=False,
        )
    with locks.try_turn_lock(*locks.turn_scope(run), wait_s=timeout) as held:
        if not held:
            raise NodeError(f"workflow {workflow_id} is busy with another call on this conversation")
        run_execute(run_id=run.pk)
    run.refresh_from_db()
    return run
