"""Webhook and schedule triggers: publishing syncs them, and they create runs.

Schedules live in django-celery-beat's tables (one PeriodicTask per published schedule node, named
``skein:<workflow>:<node>``); beat sends ``fire_schedule`` ticks to the workers. A tick for a
schedule whose previous run is still queued or running is skipped, so ticks never pile up.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time
import zoneinfo
from dataclasses import dataclass
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django_celery_beat.models import CrontabSchedule, IntervalSchedule, PeriodicTask

from core.text import BadJSON, parse_json
from participants import services as participants
from runs import services as runs
from runs import threads
from runs.models import Run, Thread
from triggers import beat
from triggers.models import SeenSignature, Webhook, new_signing_secret, new_webhook_token
from workflows import versions
from workflows.analysis import version_analysis
from workflows.models import Workflow, WorkflowVersion

logger = logging.getLogger("skein.triggers")

SIGNATURE_HEADER = "X-Skein-Signature"
TIMESTAMP_HEADER = "X-Skein-Timestamp"
# A signed request dated ahead of this server's clock by more than this is refused (clock skew).
FUTURE_SKEW_S = 30
FIRE_SCHEDULE_TASK = "workflows.tasks.fire_schedule"  # pinned (triggers.tasks): stored in beat's rows


class WebhookRejected(Exception):
    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def _trigger_nodes(version: WorkflowVersion, trigger_type: str) -> dict:
    analysis = version_analysis(version)
    return {nid: rn.params for nid, rn in analysis.nodes.items() if rn.node_type.type == trigger_type}


def periodic_task_prefix(workflow_id: int) -> str:
    return f"skein:{workflow_id}:"


# --- publishing ---------------------------------------------------------------------------------
def triggers_sync(*, workflow: Workflow, version: WorkflowVersion) -> None:
    """Make webhooks and beat's periodic tasks match the published version's trigger nodes."""
    with transaction.atomic():
        hooks = _trigger_nodes(version, "trigger.webhook")
        Webhook.objects.filter(workflow=workflow).exclude(node__in=list(hooks)).delete()
        for node_id in hooks:
            if not Webhook.objects.filter(workflow=workflow, node=node_id).exists():
                webhook = Webhook(workflow=workflow, node=node_id)
                webhook.signing_secret = new_signing_secret()
                webhook.save()

        schedules = _trigger_nodes(version, "trigger.schedule")
        prefix = periodic_task_prefix(workflow.pk)
        names = {f"{prefix}{node_id}" for node_id in schedules}
        PeriodicTask.objects.filter(name__startswith=prefix).exclude(name__in=names).delete()
        for node_id, params in schedules.items():
            _schedule_upsert(workflow, node_id, params)


def _schedule_upsert(workflow: Workflow, node_id: str, params) -> None:
    fields = {"task": FIRE_SCHEDULE_TASK, "kwargs": json.dumps({"workflow_id": workflow.pk, "node": node_id}), "enabled": True}
    if params.interval_seconds:
        interval, _ = IntervalSchedule.objects.get_or_create(every=params.interval_seconds, period=IntervalSchedule.SECONDS)
        fields.update(interval=interval, crontab=None)
    else:
        minute, hour, day_of_month, month, day_of_week = params.cron.split()
        crontab, _ = CrontabSchedule.objects.get_or_create(
            minute=minute,
            hour=hour,
            day_of_month=day_of_month,
            month_of_year=month,
            day_of_week=day_of_week,
            timezone=zoneinfo.ZoneInfo(params.timezone),
        )
        fields.update(crontab=crontab, interval=None)
    PeriodicTask.objects.update_or_create(name=f"{periodic_task_prefix(workflow.pk)}{node_id}", defaults=fields)


def triggers_remove(*, workflow_id: int) -> None:
    PeriodicTask.objects.filter(name__startswith=periodic_task_prefix(workflow_id)).delete()


def webhook_regenerate(*, webhook: Webhook) -> Webhook:
    webhook.token = new_webhook_token()
    webhook.signing_secret = new_signing_secret()
    webhook.save()
    return webhook


# --- reading ------------------------------------------------------------------------------------
def next_runs(*, workflow: Workflow, node_id: str, count: int = 3) -> list[datetime]:
    task = PeriodicTask.objects.filter(name=f"{periodic_task_prefix(workflow.pk)}{node_id}").select_related("crontab", "interval").first()
    if task is None or not task.enabled:
        return []
    now = timezone.now()
    if task.interval:
        step = timedelta(seconds=task.interval.every)
        start = (task.last_run_at or now) + step
        start = max(start, now)
        return [start + step * i for i in range(count)]
    schedule = task.crontab.schedule
    times, moment = [], now
    for _ in range(count):
        start, delta, _ = schedule.remaining_delta(moment)  # the first firing after ``moment``
        moment = (start + delta).replace(second=0, microsecond=0)
        times.append(moment)
    return times


def triggers_of(*, workflow: Workflow, base_url: str) -> list[dict]:
    version = workflow.published_version
    if version is None:
        return []
    webhooks = {w.node: w for w in Webhook.objects.filter(workflow=workflow)}
    scheduler = None
    listed = []
    for node_id, rn in sorted(version_analysis(version).nodes.items()):
        if not rn.node_type.is_trigger:
            continue
        item = {"node": node_id, "type": rn.node_type.type}
        if node_id in webhooks:
            hook = webhooks[node_id]
            item.update(
                webhook_url=f"{base_url}/api/hooks/{hook.token}/",
                require_signature=rn.params.require_signature,
                signing_secret=hook.signing_secret,
            )
        if rn.node_type.type == "trigger.schedule":
            item["next_runs"] = next_runs(workflow=workflow, node_id=node_id)
            item["next_run"] = item["next_runs"][0] if item["next_runs"] else None
            # whether a beat has ticked lately (its heartbeat): "next runs" mean nothing without one
            item["scheduler"] = scheduler = scheduler or beat.schedules_status()
        listed.append(item)
    return listed


# --- webhooks -----------------------------------------------------------------------------------
@dataclass
class WebhookCall:
    body: bytes
    content_type: str
    headers: dict
    idempotency_key: str | None = None
    version: str | None = None  # ?version=N / X-Skein-Version: run that published version
    traceparent: str = ""  # the caller's W3C trace context, continued by the run's trace


def sign(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def _check_signature(webhook: Webhook, call: WebhookCall) -> tuple[str, datetime]:
    """The request's signature and until when it must be remembered; ``WebhookRejected`` (401)
    when it is missing, wrong, too old, or dated more than ``FUTURE_SKEW_S`` ahead."""
    timestamp = call.headers.get(TIMESTAMP_HEADER, "")
    signature = call.headers.get(SIGNATURE_HEADER, "")
    if not timestamp or not signature:
        raise WebhookRejected(401, f"this webhook requires the {TIMESTAMP_HEADER} and {SIGNATURE_HEADER} headers")
    if not timestamp.isdigit() or len(timestamp) > 12:
        raise WebhookRejected(401, f"{TIMESTAMP_HEADER} must be a Unix time in seconds")
    sent, now = int(timestamp), time.time()
    window = settings.SKEIN_WEBHOOK_REPLAY_WINDOW_S
    if now - sent > window:
        raise WebhookRejected(401, f"the timestamp is outside the {window}s replay window")
    if sent - now > FUTURE_SKEW_S:
        raise WebhookRejected(401, f"the timestamp is {sent - now:.0f}s in the future (at most {FUTURE_SKEW_S}s of clock skew)")
    if len(signature) > 100 or not hmac.compare_digest(sign(webhook.signing_secret, timestamp, call.body), signature):
        raise WebhookRejected(401, "the signature does not match (HMAC-SHA256 of '<timestamp>.<body>')")
    # Remembered for as long as the timestamp is accepted: a replay is refused until then.
    return signature, datetime.fromtimestamp(sent + window + 1, tz=dt_timezone.utc)


def _payload(call: WebhookCall) -> tuple[dict, str]:
    """The payload and the trigger's message: the payload's ``message``, else the body as text."""
    text = call.body.decode("utf-8", errors="replace")
    if "\x00" in text or "\\u0000" in text:  # no database stores NUL in text
        raise WebhookRejected(400, "NUL characters are not allowed in the body")
    if "json" in call.content_type or (not call.content_type and text.lstrip().startswith(("{", "["))):
        try:
            parsed = parse_json(text) if text.strip() else {}
        except BadJSON as exc:
            raise WebhookRejected(400, str(exc)) from None
        payload = parsed if isinstance(parsed, dict) else {"body": parsed}
        message = payload.get("message")
        return payload, message if isinstance(message, str) else text
    return {"body": text}, text


def webhook_fire(*, token: str, call: WebhookCall) -> tuple[Run, bool]:
    """Start a run for a webhook call; returns (run, created).

    Nothing runs twice: the same ``Idempotency-Key`` on the same webhook trigger, or the same
    signed request again, returns the first run (a key reused with another body is a 422). Keys
    of one webhook never meet another's."""
    webhook = Webhook.objects.select_related("workflow__published_version").filter(token=token).first()
    if webhook is None or webhook.workflow.published_version is None:
        raise WebhookRejected(404, "no such webhook")
    workflow = webhook.workflow
    try:
        version = versions.version_pinned(workflow=workflow, value=call.version)
    except (versions.BadVersion, versions.VersionNotFound) as exc:
        raise WebhookRejected(400 if isinstance(exc, versions.BadVersion) else 404, str(exc)) from None
    params = _trigger_nodes(version, "trigger.webhook").get(webhook.node)
    if params is None:
        raise WebhookRejected(404, "no such webhook")
    if len(call.body) > settings.SKEIN_WEBHOOK_MAX_BYTES:
        raise WebhookRejected(413, f"the body is larger than {settings.SKEIN_WEBHOOK_MAX_BYTES} bytes")
    signed = _check_signature(webhook, call) if params.require_signature else None
    payload, message = _payload(call)
    key = call.idempotency_key or None
    if key is not None and (len(key) > 200 or "\x00" in key):
        raise WebhookRejected(400, "Idempotency-Key is longer than 200 characters")
    try:
        with transaction.atomic():
            if signed:
                earlier = _seen(webhook, *signed)
                if earlier is not None:
                    return earlier, False
            if key:
                earlier = Run.objects.filter(workflow=workflow, trigger_node=webhook.node, idempotency_key=key).first()
                if earlier is not None:
                    return _same_request(earlier, payload, message), False
            participant = _payload_participant(workflow, payload.get("participant"))
            thread = _payload_thread(workflow, payload.get("thread"))
            try:
                run = runs.run_create(
                    version=version,
                    trigger="webhook",
                    trigger_node=webhook.node,
                    input_text=message,
                    payload=payload,
                    thread=thread,
                    idempotency_key=key,
                    trace_context=call.traceparent,
                    participant=participant,
                )
            except threads.ParticipantMismatch as exc:  # the payload's thread belongs to someone else
                raise WebhookRejected(409, exc.message) from None
            if signed:
                SeenSignature.objects.filter(webhook=webhook, signature=signed[0]).update(run=run)
    except IntegrityError:
        # The same request at the same moment: the first one's run answers both.
        earlier = _first_answer(webhook, signed, key)
        if earlier is None:
            raise
        return (_same_request(earlier, payload, message) if key and not signed else earlier), False
    return run, True


def _seen(webhook: Webhook, signature: str, expires: datetime) -> Run | None:
    """Record a signed request; if it was received before, its first run (409 while there is none)."""
    SeenSignature.objects.filter(expires__lt=timezone.now()).delete()
    seen, created = SeenSignature.objects.get_or_create(webhook=webhook, signature=signature, defaults={"expires": expires})
    if created:
        return None
    if seen.run_id is None:
        raise WebhookRejected(409, "this signed request was already received (replay)")
    return Run.objects.get(pk=seen.run_id)


def _first_answer(webhook: Webhook, signed, key: str | None) -> Run | None:
    if signed:
        seen = SeenSignature.objects.filter(webhook=webhook, signature=signed[0]).select_related("run").first()
        if seen is not None and seen.run is not None:
            return seen.run
    if key:
        return Run.objects.filter(workflow=webhook.workflow, trigger_node=webhook.node, idempotency_key=key).first()
    return None


def _same_request(earlier: Run, payload: dict, message: str) -> Run:
    """The first run of an Idempotency-Key, if this request is the same as its first one."""
    if earlier.payload != payload or earlier.input != message:
        raise WebhookRejected(422, "this Idempotency-Key was already used for a different request body")
    return earlier


def _payload_participant(workflow: Workflow, value):
    """``participant`` in a payload names who is talking: memory keyed by participant follows them."""
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    try:
        return participants.participant_for_call(workflow=workflow, value=value)
    except participants.ParticipantInvalid as exc:
        raise WebhookRejected(400, exc.message) from None


def _payload_thread(workflow: Workflow, name) -> Thread | None:
    """``thread`` in a payload names a conversation by the caller's own key; it continues its memory."""
    if name in (None, ""):
        return None
    if not isinstance(name, (str, int)) or len(str(name)) > 200:
        raise WebhookRejected(400, "'thread' must be a string (or number) of at most 200 characters")
    thread, _ = threads.thread_for_key(workflow=workflow, key=str(name), title=f"webhook: {name}"[:200])
    return thread


# --- schedules ----------------------------------------------------------------------------------
def schedule_fire(*, workflow_id: int, node: str) -> Run | None:
    """One tick. Skipped (None) when the previous run of this schedule has not finished."""
    workflow = Workflow.objects.select_related("published_version").filter(pk=workflow_id).first()
    if workflow is None or workflow.published_version is None:
        triggers_remove(workflow_id=workflow_id)
        return None
    params = _trigger_nodes(workflow.published_version, "trigger.schedule").get(node)
    if params is None:
        return None
    with transaction.atomic():
        # Lock the workflow row so two ticks cannot both see "nothing running".
        Workflow.objects.select_for_update().filter(pk=workflow_id).first()
        busy = Run.objects.filter(workflow_id=workflow_id, trigger_node=node, status__in=[Run.Status.QUEUED, Run.Status.RUNNING]).exists()
        if busy:
            logger.info("schedule %s/%s: previous run still going, tick skipped", workflow_id, node)
            return None
        return runs.run_create(version=workflow.published_version, trigger="schedule", trigger_node=node, input_text=params.input)
