import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import django  # noqa: E402

django.setup(set_prefix=False)

from config.handlers import SyncChainASGIHandler  # noqa: E402

django_asgi_app = SyncChainASGIHandler()

# Load the URLconf (and with it litellm, which takes seconds to import) at start-up rather than
# on the first request.
from django.urls import get_resolver  # noqa: E402

get_resolver().url_patterns  # noqa: B018 (reading it loads the URLconf)

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402

from config.routing import websocket_urlpatterns  # noqa: E402
from core.websocket import AllowedHostsOnly  # noqa: E402
from runs.api.deferred import DeferredWaits  # noqa: E402

application = ProtocolTypeRouter(
    {
        "http": DeferredWaits(django_asgi_app),  # a waiting chat request holds no thread (runs/api/deferred.py)
        "websocket": AllowedHostsOnly(AuthMiddlewareStack(URLRouter(websocket_urlpatterns))),
    }
)
