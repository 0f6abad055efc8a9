"""Whether schedules fire, in the full mode for real: daphne and celery beat as separate processes,
Redis between them. The triggers API says so from beat's heartbeat, not from a guess."""

from __future__ import annotations

import httpx
import pytest

from tests.graphs import chat_graph, edge, node
from tests.stack import BIN, Process, full_mode_env, start_daphne, wait_for

pytestmark = [pytest.mark.postgres, pytest.mark.redis, pytest.mark.django_db(transaction=True)]


def test_the_triggers_say_whether_a_beat_ticks(require_postgres, require_redis, api, user, make_workflow, provider, tmp_path):
    from django.db import connection
    from rest_framework.authtoken.models import Token

    graph = chat_graph(provider.pk)
    graph["nodes"].append(node("nightly", "trigger.schedule", 0, 200, cron="0 3 * * *", input="report"))
    graph["edges"].append(edge("nightly", "agent"))
    workflow = make_workflow(graph)
    assert api.post(f"/api/workflows/{workflow['id']}/publish/").status_code == 201
    headers = {"Authorization": f"Token {Token.objects.create(user=user).key}"}
    env = full_mode_env(connection.settings_dict["NAME"], require_redis, SKEIN_BEAT_STALE_S=3)
    web, base = start_daphne(env, tmp_path)
    beat = None

    def scheduler() -> dict:
        triggers = httpx.get(f"{base}/api/workflows/{workflow['id']}/", headers=headers, timeout=30).json()["triggers"]
        return next(t for t in triggers if t["type"] == "trigger.schedule")["scheduler"]

    try:
        assert scheduler() == {"running": False, "message": "schedules are not running: start `make beat` (or the beat service)"}
        # beat as `make beat` starts it (its scheduler from the settings)
        beat = Process("beat", [str(BIN / "celery"), "-A", "config", "beat", "--loglevel", "INFO", "--max-interval", "1"], env, tmp_path)
        wait_for(lambda: scheduler()["running"], timeout=90, interval=0.5, what="the beat's heartbeat", diagnostics=beat.output)
        assert scheduler() == {"running": True, "message": ""}
        beat.stop()
        # no tick for SKEIN_BEAT_STALE_S: the triggers say so again
        wait_for(lambda: not scheduler()["running"], timeout=30, interval=0.5, what="the heartbeat to go stale")
    finally:
        if beat is not None:
            beat.stop()
        web.stop()
