"""A database of the layout before the apps moved migrates forward with nothing copied or lost
(tests/migration_scenario.py): every row of the moved models' tables is there, byte for byte, and
today's code reads them through its own models; content types follow their models; a schedule
stored by name still reaches its task. On SQLite (the embedded mode) and on PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid

import pytest

from tests.import_cycles import ROOT
from tests.stack import embedded_env, full_mode_env

MOVED = {
    "workflows.provider": "providers.provider",
    "workflows.participant": "participants.participant",
    "workflows.thread": "runs.thread",
    "workflows.message": "runs.message",
    "workflows.run": "runs.run",
    "workflows.runstep": "runs.runstep",
    "workflows.webhook": "triggers.webhook",
    "workflows.seensignature": "triggers.seensignature",
}


# Columns added to the moved tables after the move, with the value an old row gets.
NEW_COLUMNS = {
    ("workflows_runstep", "rounds", "None"),
    ("memory_historymessage", "tool_calls", "None"),
    ("memory_historymessage", "tool_call_id", ""),
}


def _run(env: dict, *args: str) -> str:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def _migrate_the_old_layout(env: dict) -> None:
    before = json.loads(_run(env, "-m", "tests.migration_scenario", "old"))
    _run(env, "manage.py", "migrate", "--noinput")
    after = json.loads(_run(env, "-m", "tests.migration_scenario", "today"))

    assert all(before["rows"][table] for table in before["rows"]), "every table holds a row to keep"
    # Nothing copied, nothing lost, nothing changed: every old column of every row as it was (columns
    # added since, such as a step's tool rounds, hold their defaults: NEW_COLUMNS).
    kept = {table: [{c: row[c] for c in rows[0]} for row in after["rows"][table]] for table, rows in before["rows"].items()}
    assert kept == before["rows"]
    added = {
        (table, column, row[column])
        for table, rows in after["rows"].items()
        for row in rows
        for column in row
        if column not in before["rows"][table][0]
    }
    assert added == NEW_COLUMNS
    today = after["today"]
    assert today["provider_key"] == "sk-secret"  # still decrypts
    assert today["run"] == ["hello", "customer-42", "support", "customer-42"]
    assert today["transcript"] == [["user", "hello"], ["assistant", "hi there"]]
    assert today["steps"] == [["chat", [{"role": "user", "content": "hello"}]]]
    assert today["webhook"] == ["whsec_1", "hello"]
    assert today["memory"] == [True, True, "customer-42"]
    assert today["test_result_thread"] == "hello"
    assert (today["participant_threads"], today["thread_runs"]) == (["hello"], 1)
    # Content types keep their ids under the new labels (permissions and the admin's history point
    # at them), and migrate's own pass made no second one for a moved model.
    old_ids = {label: before["content_types"][label] for label in MOVED}
    assert {new: today["content_types"][new] for new in MOVED.values()} == {MOVED[old]: pk for old, pk in old_ids.items()}
    assert not [label for label in today["content_types"] if label in MOVED]
    assert today["content_type_models"] == {
        "providers.provider": "providers.models",
        "participants.participant": "participants.models",
        "runs.thread": "runs.models",
        "runs.run": "runs.models",
        "triggers.webhook": "triggers.models",
    }
    assert today["permissions"] == ["providers.view_provider", "runs.view_run", "runs.view_thread", "triggers.view_webhook"]
    assert today["schedule_task_registered"], "a schedule stored before the move names a task that no longer exists"


def test_an_embedded_database_of_the_old_layout_migrates_with_every_row(tmp_path):
    _migrate_the_old_layout(embedded_env(tmp_path / "old-layout.sqlite3"))


@pytest.mark.postgres
def test_a_postgresql_database_of_the_old_layout_migrates_with_every_row(require_postgres):
    import psycopg
    from django.db import connection

    settings = connection.settings_dict
    server = dict(host=settings.get("HOST") or "127.0.0.1", port=settings.get("PORT") or 5432, user=settings.get("USER") or "postgres")
    name = f"skein_old_layout_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        _migrate_the_old_layout(full_mode_env(name, ""))
    finally:
        with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
