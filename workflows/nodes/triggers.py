"""Trigger nodes: where a run starts. Each passes the run's input message through."""

from __future__ import annotations

import zoneinfo

from celery.schedules import crontab
from pydantic import Field, field_validator

from engine.registry import FlowValue, NodeResult, NodeType, Params, Port


class TriggerNode(NodeType):
    category = "Triggers"
    is_trigger = True
    outputs = (Port("output", label="message"),)

    def run(self, ctx, inputs):
        value = inputs["input"][0]
        default = getattr(ctx.params, "input", "")
        if not value.text and default:  # Run pressed with no message: the trigger's own input
            value = FlowValue(default)
        return NodeResult(outputs={"output": value})


class ChatTrigger(TriggerNode):
    type = "trigger.chat"
    label = "Chat message"
    description = "A message from the chat widget, the test chat or the chat API."


class ManualTrigger(TriggerNode):
    type = "trigger.manual"
    label = "Manual run"
    description = "The editor's Run button, with an input message."

    class Params(Params):
        input: str = Field("", max_length=20000, description="Default input when Run is pressed without one")


class WebhookTrigger(TriggerNode):
    type = "trigger.webhook"
    label = "Webhook"
    description = "An HTTP POST to the workflow's secret URL; the payload's 'message' is the input."

    class Params(Params):
        require_signature: bool = Field(False, description="Require an HMAC-SHA256 signature header")


def parse_cron(expression: str) -> crontab:
    parts = expression.split()
    if len(parts) != 5:
        raise ValueError("cron needs five fields: minute hour day-of-month month day-of-week")
    minute, hour, day_of_month, month, day_of_week = parts
    return crontab(minute=minute, hour=hour, day_of_month=day_of_month, month_of_year=month, day_of_week=day_of_week)


class ScheduleTrigger(TriggerNode):
    type = "trigger.schedule"
    label = "Schedule"
    description = "Runs on a cron schedule in a time zone, with a fixed input."
    summary = ("{cron}", " · {timezone}")

    class Params(Params):
        cron: str = Field("0 9 * * *", description="minute hour day-of-month month day-of-week")
        timezone: str = Field("UTC")
        input: str = Field("", max_length=20000, description="The message each run starts with")
        interval_seconds: int | None = Field(None, ge=1, le=31_536_000, description="Run every N seconds instead of on the cron expression")

        @field_validator("cron")
        @classmethod
        def _valid_cron(cls, value: str) -> str:
            try:
                parse_cron(value)
            except Exception as exc:  # celery raises several types for bad fields
                raise ValueError(f"invalid cron expression: {exc}") from None
            return value

        @field_validator("timezone")
        @classmethod
        def _valid_timezone(cls, value: str) -> str:
            try:
                zoneinfo.ZoneInfo(value)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"unknown time zone '{value}'") from None
            return value
