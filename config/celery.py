import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("skein")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def _closed_redis_transport_is_a_connection_error() -> None:
    """Keep the worker alive when Redis restarts while turns run (kombu 5.7, Redis broker).

    On a lost broker connection the consumer first drops the transport (its ``client`` becomes
    None), then closes the channel, which tries to restore the unacknowledged (late-ack) messages
    through the dropped transport; acks of the tasks that finish afterwards go the same way. Both
    raise ``AttributeError: 'NoneType' object has no attribute 'hostname'``, which Celery takes
    for an unrecoverable error: the worker exits, and no turn runs until someone restarts it.
    A closed transport is a lost connection: say so, and Celery logs "Couldn't ack", reconnects and
    goes on (the messages are gone with the old connection; the turns they ran are done, or are
    re-enqueued by ``recover_turns``). Tested by tests/test_infra_faults.py.
    """
    try:
        import redis
        from kombu.transport import redis as kombu_redis
    except ImportError:  # pragma: no cover - no Redis transport, nothing to harden
        return
    original = kombu_redis.Channel._connparams
    if getattr(original, "skein_hardened", False):
        return

    def _connparams(self, asynchronous=False):
        if self.connection is None or self.connection.client is None:
            raise redis.exceptions.ConnectionError("the broker connection was closed")
        return original(self, asynchronous=asynchronous)

    _connparams.skein_hardened = True
    kombu_redis.Channel._connparams = _connparams


_closed_redis_transport_is_a_connection_error()
