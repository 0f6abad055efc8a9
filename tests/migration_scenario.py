"""A database of the layout before the apps moved (every model in ``workflows``), with data, migrated
to today's layout as a user does (``manage.py migrate``). On an empty database (``DATABASE_URL``),
``python -m tests.migration_scenario old`` makes it and prints its rows as JSON; after the migrate,
``python -m tests.migration_scenario today`` prints the same tables' rows and what today's code reads
through its models. tests/test_migrations.py runs the three on SQLite and on PostgreSQL.

The old database is made by Django's own migration machinery: the migrations up to the move
(``workflows`` 0008, ``memory`` 0004, ``conversation_tests`` 0001) are exactly the schema of that
layout, and the rows are written through their historical models.
"""

from __future__ import annotations

import json
import os
import sys

# The moved models' tables (their names did not change) and what must still be in them.
TABLES = [
    "workflows_provider",
    "workflows_participant",
    "workflows_thread",
    "workflows_message",
    "workflows_run",
    "workflows_runstep",
    "workflows_webhook",
    "workflows_seensignature",
    "memory_history",
    "memory_historymessage",
    "memory_summary",
    "memory_summarization",
    "memory_fact",
    "memory_factextraction",
    "conversation_tests_conversationtest",
    "conversation_tests_testrun",
    "conversation_tests_testresult",
]
BEFORE_THE_MOVE = {"workflows": "0008_participants", "memory": "0004_facts", "conversation_tests": "0001_initial"}
NEW_APPS = {"providers", "participants", "runs", "triggers"}


def _rows(connection) -> dict[str, list]:
    """Each table's rows, each a {column: value as text}: later migrations may add columns, and
    the test compares the columns the old layout had."""
    rows = {}
    with connection.cursor() as cursor:
        for table in TABLES:
            cursor.execute(f"SELECT * FROM {table} ORDER BY id")  # noqa: S608 (names from the list above)
            columns = [column[0] for column in cursor.description]
            rows[table] = [{c: str(v) for c, v in zip(columns, row, strict=True)} for row in cursor.fetchall()]
    return rows


def _content_types(apps) -> dict[str, int]:
    ContentType = apps.get_model("contenttypes", "ContentType")
    return {f"{ct.app_label}.{ct.model}": ct.pk for ct in ContentType.objects.all()}


def _old_data(apps) -> None:
    """One of each moved model, tied together as the app ties them, through the historical models."""
    from core import crypto

    User = apps.get_model("auth", "User")
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    old = {name: apps.get_model("workflows", name) for name in ("Workflow", "WorkflowVersion", "Provider", "Participant", "Thread")}
    old.update({name: apps.get_model("workflows", name) for name in ("Message", "Run", "RunStep", "Webhook", "SeenSignature")})
    memory = {
        name: apps.get_model("memory", name) for name in ("History", "HistoryMessage", "Summary", "Summarization", "Fact", "FactExtraction")
    }
    tests = {name: apps.get_model("conversation_tests", name) for name in ("ConversationTest", "TestRun", "TestResult")}
    PeriodicTask = apps.get_model("django_celery_beat", "PeriodicTask")
    IntervalSchedule = apps.get_model("django_celery_beat", "IntervalSchedule")

    owner = User.objects.create(username="alice", password="!")
    old["Provider"].objects.create(
        owner=owner, name="fake", kind="openai_compatible", api_base="http://127.0.0.1:9/v1", api_key_encrypted=crypto.encrypt("sk-secret")
    )
    graph = {"nodes": [{"id": "chat", "type": "trigger.chat", "position": {"x": 0, "y": 0}, "data": {}}], "edges": []}
    workflow = old["Workflow"].objects.create(owner=owner, name="support", graph=graph, public_key="wk_migration")
    version = old["WorkflowVersion"].objects.create(workflow=workflow, number=1, graph=graph)
    old["Workflow"].objects.filter(pk=workflow.pk).update(published_version=version)
    participant = old["Participant"].objects.create(owner=owner, external_id="customer-42")
    thread = old["Thread"].objects.create(workflow=workflow, owner=owner, title="hello", last_seq=2, participant=participant)
    run = old["Run"].objects.create(
        workflow=workflow,
        version=version,
        thread=thread,
        participant=participant,
        trigger="chat",
        trigger_node="chat",
        status="succeeded",
        input="hello",
        output="hi there",
        warnings=[],
    )
    old["Message"].objects.create(thread=thread, seq=1, role="user", content="hello", run=run)
    old["Message"].objects.create(thread=thread, seq=2, role="assistant", content="hi there", run=run)
    old["RunStep"].objects.create(
        run=run,
        node="chat",
        type="trigger.chat",
        position=1,
        status="succeeded",
        output="hello",
        messages=[{"role": "user", "content": "hello"}],
    )
    webhook = old["Webhook"].objects.create(
        workflow=workflow, node="hook", token="wh_migration", signing_secret_encrypted=crypto.encrypt("whsec_1")
    )
    old["SeenSignature"].objects.create(webhook=webhook, signature="sha256=abc", run=run, expires="2030-01-01T00:00:00Z")
    history = memory["History"].objects.create(workflow=workflow, kind="global", name="", key=f"thread:{thread.pk}")
    memory["HistoryMessage"].objects.create(history=history, seq=1, role="user", content="hello", run=run)
    memory["Summary"].objects.create(history=history, memory_node="memory", text="the user said hello", covers_through=1)
    memory["Summarization"].objects.create(
        history=history, memory_node="memory", run=run, status="ok", model="m", from_seq=1, through_seq=1, message_count=1
    )
    fact = memory["Fact"].objects.create(
        workflow=workflow, key="participant:1", participant=participant, name="city", value="Porto", run=run
    )
    memory["FactExtraction"].objects.create(
        workflow=workflow, key="participant:1", participant=participant, memory_node="facts", run=run, status="ok", model="m"
    )
    test = tests["ConversationTest"].objects.create(workflow=workflow, name="greets", turns=[{"message": "hello", "expect": []}])
    test_run = tests["TestRun"].objects.create(workflow=workflow, version=version, status="passed")
    tests["TestResult"].objects.create(test_run=test_run, test=test, position=1, name="greets", thread=thread, status="passed")
    assert fact.pk and test_run.pk

    # What a database of that layout holds beside its tables: content types (and what refers to
    # them: permissions, the admin's history) and the schedules beat runs by task name.
    for model in ("provider", "participant", "thread", "message", "run", "runstep", "webhook", "seensignature"):
        content_type = ContentType.objects.create(app_label="workflows", model=model)
        Permission.objects.create(content_type=content_type, codename=f"view_{model}", name=f"Can view {model}")
    every = IntervalSchedule.objects.create(every=60, period="seconds")
    PeriodicTask.objects.create(
        name=f"skein:{workflow.pk}:tick",
        task="workflows.tasks.fire_schedule",
        interval=every,
        kwargs=json.dumps({"workflow_id": workflow.pk, "node": "tick"}),
    )


def _today() -> dict:
    """What today's code reads of the migrated rows, through its own models."""
    from django.apps import apps
    from django.contrib.auth.models import Permission
    from django.contrib.contenttypes.models import ContentType
    from django_celery_beat.models import PeriodicTask

    from config.celery import app
    from conversation_tests.models import TestResult
    from memory.models import Fact, HistoryMessage, Summarization
    from participants.models import Participant
    from providers.models import Provider
    from runs.models import Message, Run, RunStep, Thread
    from triggers.models import SeenSignature, Webhook

    app.loader.import_default_modules()
    run = Run.objects.select_related("thread__participant", "version__workflow", "participant").get()
    return {
        "provider_key": Provider.objects.get().api_key,
        "run": [run.thread.title, run.thread.participant.external_id, run.version.workflow.name, run.participant.external_id],
        "transcript": list(Message.objects.filter(thread=run.thread).order_by("seq").values_list("role", "content")),
        "steps": list(RunStep.objects.filter(run=run).values_list("node", "messages")),
        "webhook": [Webhook.objects.get().signing_secret, SeenSignature.objects.select_related("run").get().run.input],
        "memory": [
            HistoryMessage.objects.select_related("run").get().run.pk == run.pk,
            Summarization.objects.get().run_id == run.pk,
            Fact.objects.select_related("participant").get().participant.external_id,
        ],
        "test_result_thread": TestResult.objects.select_related("thread").get().thread.title,
        "participant_threads": list(Participant.objects.get().threads.values_list("title", flat=True)),
        "thread_runs": Thread.objects.get().runs.count(),
        "content_types": {f"{ct.app_label}.{ct.model}": ct.pk for ct in ContentType.objects.all()},
        "content_type_models": {
            label: ContentType.objects.get_by_natural_key(*label.split(".")).model_class().__module__
            for label in ("providers.provider", "participants.participant", "runs.thread", "runs.run", "triggers.webhook")
        },
        "permissions": sorted(
            f"{p.content_type.app_label}.{p.codename}"
            for p in Permission.objects.filter(codename__startswith="view_")
            if p.content_type.model in ("thread", "run", "provider", "webhook")
        ),
        "schedule_task_registered": all(task.task in app.tasks for task in PeriodicTask.objects.all()),
        "installed": sorted(config.label for config in apps.get_app_configs()),
    }


def main(phase: str) -> None:
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from django.db import connection
    from django.db.migrations.executor import MigrationExecutor

    if phase == "old":
        executor = MigrationExecutor(connection)
        old_layout = [(app, BEFORE_THE_MOVE.get(app, name)) for app, name in executor.loader.graph.leaf_nodes() if app not in NEW_APPS]
        executor.migrate(old_layout)
        old_apps = executor.loader.project_state(old_layout).apps
        _old_data(old_apps)
        report = {"rows": _rows(connection), "content_types": _content_types(old_apps)}
    else:
        report = {"rows": _rows(connection), "today": _today()}
    json.dump(report, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
