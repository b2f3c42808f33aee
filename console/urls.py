from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.urls import include, path
from django.views.generic import RedirectView
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from console import views
from core import views as core_views
from gateway import views as gateway_views
from jobs.urls import spark_urlpatterns
from monitoring import views as monitoring_views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # /queues/status/ predates the cross-app status page and stays as an alias.
    path("queues/status/", core_views.status_views, name="status_views_alias"),
    path("status/", core_views.status_views, name="status_views"),
    path("queues/parallel/", include("parallel.urls")),
    path("queues/", include("queues.urls")),
    path("changelog/", include("core.urls")),
    path("rules/", include("rules.urls")),
    path("propagations/", include("jobs.urls")),
    # The gateway's dashboard keeps the un-namespaced name the navigation bar uses.
    path("gateway/", gateway_views.dashboard, name="gateway_home"),
    path("gateway/", include("gateway.urls")),
    path("sites/", include("sites.urls")),
    path("definitions/", include("definitions.urls")),
    path("instances/", include("instances.urls")),
    path("spark/", include((spark_urlpatterns, "spark"))),
    # The "Jobs" section was a placeholder until the Spark jobs arrived; old links still work.
    path("jobs/", RedirectView.as_view(pattern_name="spark:job_list"), name="jobs_home"),
    path("api/", include("console.api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    # A page for people: no session sends them to the login page (the middleware leaves /api/ to
    # DRF, whose answer would be a bare 401); the role check is the schema's (SERVE_PERMISSIONS).
    path(
        "api/docs/",
        login_required(SpectacularSwaggerView.as_view(url_name="schema")),
        name="api-docs",
    ),
    path("admin/", admin.site.urls),
    # Prometheus's conventional path, outside /api/: its own access rule (monitoring.access).
    path("metrics", monitoring_views.metrics, name="metrics"),
]

# A body over Django's limits is refused before any view: say which limit, in the page or JSON.
handler400 = "core.views.bad_request"
handler500 = "core.views.server_error"
handler403 = "core.views.forbidden"
handler404 = "core.api.exceptions.not_found"
