from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from console import views
from core import views as core_views

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    # /queues/status/ predates the cross-app status page and stays as an alias.
    path("queues/status/", core_views.status_views, name="status_views_alias"),
    path("status/", core_views.status_views, name="status_views"),
    path("queues/", include("queues.urls")),
    path("changelog/", include("core.urls")),
    path("rules/", include("rules.urls")),
    path("propagations/", include("jobs.urls")),
    path("gateway/", views.not_built, {"area": "Gateway", "issue": 6}, name="gateway_home"),
    path("jobs/", views.not_built, {"area": "Jobs", "issue": 5}, name="jobs_home"),
    path("api/", include("console.api")),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="api-docs"),
    path("admin/", admin.site.urls),
]
