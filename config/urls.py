import re

from django.conf import settings
from django.contrib import admin
from django.http import HttpResponse
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from observability.metrics import metrics_view
from widget.api import widget_script

EDITOR_PATH = re.compile(r"^/workflows/(\d+)/?$")


def editor_preloads(workflow_id: str) -> str:
    """Preload links for the API reads the editor starts with (frontend/src/editor/data.ts): the
    browser fetches them while it is still loading the app rather than once the app has started."""
    urls = ["/api/auth/me/", "/api/node-types/", f"/api/workflows/{workflow_id}/", "/api/providers/", "/api/providers/default/"]
    return "".join(f'<link rel="preload" href="{url}" as="fetch" crossorigin>\n' for url in urls)


def spa(request, *args, **kwargs):
    """The editor's single-page app: every non-API path serves its index.html.

    Never cached as is (its hashed assets under /static/ are): a new build is picked up at once."""
    index = settings.FRONTEND_DIST / "index.html"
    if not index.exists():
        return HttpResponse(
            "<h1>Skein</h1><p>The front end is not built. Run <code>make run</code> (or <code>make frontend</code>). "
            "The API is at <a href='/api/docs/'>/api/docs/</a>.</p>",
            status=503,
        )
    html = index.read_text()
    editor = EDITOR_PATH.match(request.path)
    if editor and request.user.is_authenticated:
        # At the end of <head>, after the app's script and styles, which the server should send first.
        html = html.replace("</head>", editor_preloads(editor[1]) + "</head>", 1)
    response = HttpResponse(html, content_type="text/html; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    return response


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # Its script is served apart (?script): the page runs under the app's Content-Security-Policy.
    path("api/docs/", SpectacularSwaggerSplitView.as_view(url_name="schema", template_name="api_docs.html"), name="docs"),
    path("api/", include("accounts.urls")),
    path("api/", include("providers.urls")),
    path("api/", include("tools.urls")),
    path("api/", include("workflows.urls")),
    path("api/", include("runs.urls")),
    path("api/", include("chat.urls")),
    path("api/", include("participants.urls")),
    path("api/", include("triggers.urls")),
    path("api/", include("widget.urls")),
    path("api/", include("conversation_tests.urls")),
    path("widget.js", widget_script, name="widget-script"),  # the embeddable chat widget
    path("v1/", include("openai_api.urls")),  # the OpenAI-compatible endpoint (docs/ecosystem.md)
    path("metrics", metrics_view, name="metrics"),  # Prometheus (staff or SKEIN_METRICS_TOKEN)
    re_path(r"^(?!api/|static/|admin/|ws/|v1/|metrics$).*$", spa),
]
