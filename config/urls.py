from django.conf import settings
from django.contrib import admin
from django.http import FileResponse, HttpResponse
from django.urls import include, path, re_path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from workflows.api.widget import widget_script


def spa(request, *args, **kwargs):
    """The editor's single-page app: every non-API path serves its index.html."""
    index = settings.FRONTEND_DIST / "index.html"
    if not index.exists():
        return HttpResponse(
            "<h1>Skein</h1><p>The front end is not built. Run <code>make run</code> (or <code>make frontend</code>). "
            "The API is at <a href='/api/docs/'>/api/docs/</a>.</p>",
            status=503,
        )
    return FileResponse(open(index, "rb"), content_type="text/html")


urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("api/", include("memory.urls")),
    path("api/", include("workflows.api.urls")),
    path("widget.js", widget_script, name="widget-script"),  # the embeddable chat widget
    re_path(r"^(?!api/|static/|admin/|ws/).*$", spa),
]
