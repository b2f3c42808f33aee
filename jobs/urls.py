from django.urls import path

from core.generic import bulk_page
from jobs import views
from jobs.bulk import PROPAGATION_BULK

app_name = "jobs"

urlpatterns = [
    path("", views.PropagationListView.as_view(), name="propagation_list"),
    path("add/", views.propagation_add, name="propagation_add"),
    path("bulk/", bulk_page, {"registry": PROPAGATION_BULK}, name="propagation_bulk"),
    path("runs/", views.RunListView.as_view(), name="run_list"),
    path("workers/", views.worker_list, name="worker_list"),
    path("maintenance/", views.maintenance_set, name="maintenance_set"),
    path("topology/", views.topology, name="topology"),
    path("trace/", views.trace, name="trace"),
    path("<int:pk>/", views.propagation_detail, name="propagation"),
    path("<int:pk>/status/", views.propagation_status, name="propagation_status"),
    path("<int:pk>/edit/", views.propagation_edit, name="propagation_edit"),
    path("<int:pk>/delete/", views.propagation_delete, name="propagation_delete"),
    path("<int:pk>/start/", views.propagation_action, {"verb": "start"}, name="propagation_start"),
    path("<int:pk>/stop/", views.propagation_action, {"verb": "stop"}, name="propagation_stop"),
    path("<int:pk>/schedule/", views.schedule_add, name="schedule_add"),
    path("<int:pk>/schedule/edit/", views.schedule_edit, name="schedule_edit"),
    path(
        "<int:pk>/schedule/enable/",
        views.propagation_action,
        {"verb": "enable"},
        name="schedule_enable",
    ),
    path(
        "<int:pk>/schedule/disable/",
        views.propagation_action,
        {"verb": "disable"},
        name="schedule_disable",
    ),
    path(
        "<int:pk>/schedule/reset/",
        views.propagation_action,
        {"verb": "reset"},
        name="schedule_reset",
    ),
    path("<int:pk>/unschedule/", views.schedule_delete, name="schedule_delete"),
]

# Spark bulk propagation jobs: their own section of the console (/spark/, namespace "spark").
spark_urlpatterns = [
    path("", views.SparkJobListView.as_view(), name="job_list"),
    path("new/", views.spark_job_add, name="job_add"),
    path("<int:pk>/", views.spark_job_detail, name="job"),
    path("<int:pk>/status/", views.spark_job_status, name="job_status"),
    path("<int:pk>/cancel/", views.spark_job_action, {"verb": "cancel"}, name="job_cancel"),
    path("<int:pk>/rerun/", views.spark_job_action, {"verb": "rerun"}, name="job_rerun"),
]
