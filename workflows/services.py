"""Writes: workflows, versions, providers, threads and runs; and the turn loop that runs them."""

from __future__ import annotations

import logging
import threading
from functools import lru_cache

from django.conf import settings
from django.db import connections, transaction
from django.db.models import F
from django.utils import timezone

from memory import services as memory_services

from . import events, locks
from .engine.executor import RunFailed, execute
from .engine.graph import Graph
from .engine.registry import FlowValue
from .engine.validation import Analysis, analyze, analyze_raw, issue
from .models import Message, Provider, Run, RunStep, Thread, Workflow, WorkflowVersion
from .text import storable, storable_json

logger = logging.getLogger("skein.runs")

MAX_ATTEMPTS = 3


class StaleRevision(Exception):
    def __init__(self, current: int):
        super().__init__(f"the workflow was changed meanwhile (now at revision {current}); reload it")
        self.current = current


class InvalidWorkflow(Exception):
    def __init__(self, issues: list[dict]):
        super().__init__("the workflow has errors")
        self.issues = issues


class NoTrigger(Exception):
    pass


# --- graphs -------------------------------------------------------------------------------------
def graph_issues(*, graph, owner) -> list[dict]:
    """Every problem of a graph for this owner: the engine's checks, plus the providers its models
    name (they must be the owner's) and credentials for each model (a key stored or in the environment).

    Raises ``GraphShapeError`` for input that is not graph-shaped at all."""
    from . import llm

    analysis = analyze_raw(graph)
    issues = list(analysis.issues)
    callers = [rn for rn in analysis.nodes.values() if rn.node_type.model_ref_of(rn.params) is not None]
    wanted = {rn.params.provider for rn in callers if rn.params.provider}
    owned = {p.pk: p for p in Provider.objects.filter(owner=owner, pk__in=list(wanted))} if wanted else {}
    for rn in callers:
        pid = rn.params.provider
        if pid and pid not in owned:
            issues.append(issue(rn.node_id, "provider", f"provider {pid} does not exist"))
        elif problem := llm.credentials_problem(model=rn.params.model, provider=owned.get(pid)):
            issues.append(issue(rn.node_id, "model", problem))
    return issues


_analysis_lock = threading.Lock()


@lru_cache(maxsize=256)
def _cached_analysis(version_id: int, graph_json: str) -> Analysis:
    import json

    return analyze(Graph.parse(json.loads(graph_json)))


def version_analysis(version: WorkflowVersion) -> Analysis:
    """Versions are immutable, so their analysis is computed once per process."""
    import json

    with _analysis_lock:
        return _cached_analysis(version.pk, json.dumps(version.graph, sort_keys=True))


# --- providers ----------------------------------------------------------------------------------
def provider_create(*, owner, name: str, kind: str, api_base: str = "", api_key: str = "") -> Provider:
    provider = Provider(owner=owner, name=name, kind=kind, api_base=api_base or "")
    provider.api_key = api_key or ""
    provider.save()
    return provider


class KeyNeededAgain(Exception):
    """A stored key would go somewhere its owner did not send it."""


def provider_update(*, provider: Provider, **fields) -> Provider:
    """Change a provider. Moving a stored key (a new ``api_base`` or ``kind``) needs the key again
    in the same change (``api_key``; an empty one removes it): ``KeyNeededAgain`` otherwise."""
    moves = any(name in fields and (fields[name] or "") != getattr(provider, name) for name in ("kind", "api_base"))
    if moves and provider.has_api_key and fields.get("api_key") is None:
        raise KeyNeededAgain(
            "changing the server or the kind of a provider with a stored key needs the key again "
            "(send api_key; an empty one removes the stored key)"
        )
    for name in ("name", "kind", "api_base"):
        if name in fields:
            setattr(provider, name, fields[name] or "")
    if "api_key" in fields and fields["api_key"] is not None:
        provider.api_key = fields["api_key"]
    provider.save()
    return provider


# --- workflows ----------------------------------------------------------------------------------
def workflow_create(*, owner, name: str, graph: dict) -> Workflow:
    return Workflow.objects.create(owner=owner, name=name, graph=graph)


def workflow_update(*, workflow: Workflow, revision: int, **fields) -> Workflow:
    """Save the draft if ``revision`` is still current; otherwise ``StaleRevision`` (HTTP 409)."""
    changes = {k: v for k, v in fields.items() if k in ("name", "graph")}
    updated = Workflow.objects.filter(pk=workflow.pk, revision=revision).update(
        revision=F("revision") + 1, updated=timezone.now(), **changes
    )
    workflow.refresh_from_db()
    if not updated:
        raise StaleRevision(workflow.revision)
    return workflow


def workflow_publish(*, workflow: Workflow, by=None) -> WorkflowVersion:
    issues = graph_issues(graph=workflow.graph, owner=workflow.owner)
    if issues:
        raise InvalidWorkflow(issues)
    with transaction.atomic():
        locked = Workflow.objects.select_for_update().get(pk=workflow.pk)
        last = locked.versions.filter(number__isnull=False).order_by("-number").values_list("number", flat=True).first()
        version = WorkflowVersion.objects.create(workflow=locked, number=(last or 0) + 1, graph=locked.graph, published_by=by)
        Workflow.objects.filter(pk=locked.pk).update(published_version=version)
        workflow.published_version = version
        from .triggers import triggers_sync

        triggers_sync(workflow=workflow, version=version)
    return version


def draft_snapshot(*, workflow: Workflow) -> WorkflowVersion:
    """The draft as an immutable version, one per draft revision, for test runs."""
    version, _ = WorkflowVersion.objects.get_or_create(
        workflow=workflow, draft_revision=workflow.revision, defaults={"graph": workflow.graph}
    )
    return version


# --- runs ---------------------------------------------------------------------------------------
def _trigger_node(version: WorkflowVersion, trigger_type: str) -> str:
    analysis = version_analysis(version)
    for node_id in sorted(analysis.nodes):
        if analysis.nodes[node_id].node_type.type == f"trigger.{trigger_type}":
            return node_id
    raise NoTrigger(f"this workflow has no trigger.{trigger_type} node")


def run_create(
    *, version: WorkflowVersion, trigger: str, input_text: str, payload: dict | None = None, thread: Thread | None = None,
    trigger_node: str | None = None, idempotency_key: str | None = None, spender: str = "", trace_context: str = "",
    participant=None,
) -> Run:
    """Create a run and enqueue its turn once the transaction commits. ``participant`` (a
    ``Participant``) is who talks; on a thread it must be the thread's (``participants``)."""
    from .participants import thread_participant
    from .tasks import run_turn

    run = Run.objects.create(
        workflow_id=version.workflow_id,
        version=version,
        thread=thread,
        participant=thread_participant(thread=thread, participant=participant),
        trigger=trigger,
        trigger_node=trigger_node or _trigger_node(version, trigger),
        input=input_text,
        payload=payload or {},
        idempotency_key=idempotency_key or None,
        spender=spender[:240],
        trace_context=trace_context[:128],
    )
    # robust in the full mode: a broker that is down must not fail the request after the run was
    # stored (the client would send it again); it stays queued and recover_turns enqueues it.
    transaction.on_commit(lambda: run_turn.delay(run.pk), robust=settings.FULL_MODE)
    return run


def draft_for_run(*, workflow: Workflow) -> WorkflowVersion:
    """The draft's snapshot, if it is valid enough to run (``InvalidWorkflow`` otherwise).

    A snapshot exists only for a revision that passed validation, so later turns on the same
    revision skip it (a provider deleted since then fails the run with a clear step error)."""
    existing = WorkflowVersion.objects.filter(workflow=workflow, draft_revision=workflow.revision).first()
    if existing is not None:
        return existing
    issues = graph_issues(graph=workflow.graph, owner=workflow.owner)
    if issues:
        raise InvalidWorkflow(issues)
    return draft_snapshot(workflow=workflow)


def manual_start(*, workflow: Workflow, message: str) -> Run:
    """The editor's Run button: the draft's ``trigger.manual``, with no thread (memory binds to the run)."""
    return run_create(version=draft_for_run(workflow=workflow), trigger="manual", input_text=message)


def chat_start(
    *, workflow: Workflow, message: str, thread: Thread | None, version: WorkflowVersion | None = None, participant=None
) -> Run:
    """A participant's chat message: runs ``version`` (default: the draft) on the thread."""
    if version is None:
        version = draft_for_run(workflow=workflow)
    with transaction.atomic():
        if thread is None:
            thread = Thread.objects.create(workflow=workflow, owner=workflow.owner, title=message[:80], participant=participant)
        return run_create(version=version, trigger="chat", input_text=message, thread=thread, participant=participant)


def run_wait(*, run: Run, timeout: float | None = None) -> Run:
    """Block until the run finished (or ``timeout``); in the embedded mode it already has."""
    from .waiting import wait_for_run

    if not run.is_done:
        wait_for_run(run.pk, settings.SKEIN_CHAT_WAIT_S if timeout is None else timeout)
        run.refresh_from_db()
    return run


# --- the turn loop ------------------------------------------------------------------------------
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
    scope = (locks.THREAD_SCOPE, run.thread_id) if run.thread_id else (locks.RUN_SCOPE, run.pk)
    while True:
        with locks.try_turn_lock(*scope) as acquired:
            if not acquired:
                return
            while (next_id := _next_in_queue(run, scope)) is not None:
                run_execute(run_id=next_id)
                if not settings.FULL_MODE and next_id >= run.pk:
                    break
        following = _next_in_queue(run, scope)
        if following is None:
            return
        if not settings.FULL_MODE:
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


def turns_recover(*, older_than_s: float = 60) -> list[int]:
    """Re-enqueue unfinished runs that nobody is executing: their turn lock is free although they
    have waited for ``older_than_s`` (their task was lost, or their worker died)."""
    from .tasks import run_turn

    cutoff = timezone.now() - timezone.timedelta(seconds=older_than_s)
    stale = Run.objects.filter(status__in=[Run.Status.QUEUED, Run.Status.RUNNING], created__lt=cutoff).order_by("id")
    recovered, seen_scopes = [], set()
    for run in stale.only("id", "thread_id")[:500]:
        scope = (locks.THREAD_SCOPE, run.thread_id) if run.thread_id else (locks.RUN_SCOPE, run.pk)
        if scope in seen_scopes:
            continue
        seen_scopes.add(scope)
        with locks.try_turn_lock(*scope) as free:
            if not free:
                continue  # someone is executing this thread's turns right now
        run_turn.delay(run.pk)
        recovered.append(run.pk)
    if recovered:
        logger.warning("re-enqueued %d orphaned turn(s): %s", len(recovered), recovered)
    return recovered


def _next_in_queue(run: Run, scope) -> int | None:
    pending = (Run.Status.QUEUED, Run.Status.RUNNING)
    if scope[0] == locks.THREAD_SCOPE:
        query = Run.objects.filter(thread_id=run.thread_id, status__in=pending)
    else:
        query = Run.objects.filter(pk=run.pk, status__in=pending)
    return query.order_by("id").values_list("id", flat=True).first()


def run_execute(*, run_id: int) -> None:
    """Execute one run; the caller holds its turn lock. A run found RUNNING was interrupted (its
    worker died): its partial steps and memory entries are dropped and it runs again."""
    from .runtime import TurnRuntime  # litellm is imported on first use, not by importing services

    with transaction.atomic():
        run = Run.objects.select_for_update(of=("self",)).select_related("workflow", "version", "thread").get(pk=run_id)
        if run.is_done:
            return
        if run.status == Run.Status.RUNNING:
            RunStep.objects.filter(run=run).delete()
            memory_services.run_entries_discard(run_id=run.pk)
            if run.attempts >= MAX_ATTEMPTS:
                _finish(run, error=f"the turn was interrupted {run.attempts} times; giving up", runtime=TurnRuntime(run))
                return
        run.status = Run.Status.RUNNING
        run.attempts += 1
        run.started = timezone.now()
        run.save(update_fields=["status", "attempts", "started"])
        if run.thread_id and run.input and not (run.attempts > 1 and run.messages.filter(role=Message.Role.USER).exists()):
            _transcript_append(run, role=Message.Role.USER, content=run.input)  # once, also when re-run
        events.publish(events.RUN_STARTED, {"trigger": run.trigger, "thread": run.thread_id}, run_id=run.pk, thread_id=run.thread_id)

    from . import limits

    refusal = limits.turn_refusal(run=run)  # before any model call; its warning goes on the run
    runtime = TurnRuntime(run)
    if refusal is not None:
        _finish(run, error=refusal, runtime=runtime)
        return
    try:
        result = execute(
            version_analysis(run.version), trigger_id=run.trigger_node, input_value=FlowValue(run.input), services=runtime
        )
    except RunFailed as exc:
        _finish(run, error=exc.message if not exc.node_id else f"{exc.node_id}: {exc.message}", runtime=runtime)
    except Exception as exc:  # never leave a run RUNNING because of a bug: fail it, loudly
        logger.exception("run %s crashed", run.pk)
        _finish(run, error=f"internal error: {type(exc).__name__}: {exc}", runtime=runtime)
    else:
        runtime.memory.after_turn()  # memory.facts learn from the turn (bounded; a failure only warns)
        _finish(run, reply=result.reply, cut=result.cut, runtime=runtime)


def _finish(run: Run, *, runtime, reply: str = "", error: str = "", cut: bool = False) -> None:
    """Record the outcome, the reply in the transcript and the turn in the memory, at once."""
    with transaction.atomic():
        runtime.steps_save()
        if run.thread_id and reply:
            _transcript_append(run, role=Message.Role.ASSISTANT, content=reply)
        runtime.memory.turn_finished(user_text=run.input, reply=reply)
        run.status = Run.Status.FAILED if error else Run.Status.SUCCEEDED
        run.output = storable(reply)
        run.error = storable(error)
        run.finished = timezone.now()
        run.warnings = storable_json(runtime.warnings)
        run.prompt_tokens = runtime.prompt_tokens
        run.completion_tokens = runtime.completion_tokens
        run.cost = runtime.cost
        run.save()
        if error:
            events.publish(events.RUN_FAILED, {"error": error}, run_id=run.pk, thread_id=run.thread_id)
        else:
            events.publish(
                events.RUN_FINISHED, {"reply": reply, "warnings": run.warnings, "cut": cut}, run_id=run.pk, thread_id=run.thread_id
            )
        from . import metrics, telemetry
        from .waiting import signal_run_done

        metrics.turn_finished(run=run)
        telemetry.run_finished(run=run, runtime=runtime)

        # robust: Redis being down must not abort the thread's turn loop after the run was stored
        # (the turns queued behind it would wait for recover_turns); waiters re-read the database.
        transaction.on_commit(lambda: signal_run_done(run.pk), robust=True)


def _transcript_append(run: Run, *, role: str, content: str) -> Message:
    """Append to the run's thread; the caller holds the thread's turn lock, so no one else appends
    meanwhile (the conditional update proves it, rather than trusting it)."""
    seq = run.thread.last_seq + 1
    moved = Thread.objects.filter(pk=run.thread_id, last_seq=seq - 1).update(last_seq=seq, updated=timezone.now())
    if not moved:
        raise RuntimeError(f"thread {run.thread_id} was appended to by someone else during run {run.pk}")
    run.thread.last_seq = seq
    return Message.objects.create(thread_id=run.thread_id, seq=seq, role=role, content=storable(content), run=run)
