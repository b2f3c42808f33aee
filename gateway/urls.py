"""Gateway pages under /gateway/ (namespace "gateway"). The dashboard itself is /gateway/, named
``gateway_home`` in console/urls.py for the navigation bar."""

from django.urls import path

from core.generic import bulk_page
from gateway import views
from gateway.bulk import JOB_BULK

app_name = "gateway"

urlpatterns = [
    path("status/", views.dashboard_status, name="dashboard_status"),
    # agents
    path("agents/", views.AgentListView.as_view(), name="agent_list"),
    path("agents/add/", views.agent_add, name="agent_add"),
    path("agents/<int:pk>/", views.agent_detail, name="agent"),
    path("agents/<int:pk>/status/", views.agent_status, name="agent_status"),
    path("agents/<int:pk>/log/", views.agent_log, name="agent_log"),
    path("agents/<int:pk>/edit/", views.agent_edit, name="agent_edit"),
    path("agents/<int:pk>/delete/", views.agent_delete, name="agent_delete"),
    path("agents/<int:pk>/start/", views.agent_action, {"verb": "start"}, name="agent_start"),
    path(
        "agents/<int:pk>/shutdown/", views.agent_action, {"verb": "shutdown"}, name="agent_shutdown"
    ),
    path(
        "agents/<int:pk>/shutdown-immediate/",
        views.agent_action,
        {"verb": "shutdown_immediate"},
        name="agent_shutdown_immediate",
    ),
    path("agents/<int:pk>/log-level/", views.agent_log_level, name="agent_log_level"),
    path("agents/<int:pk>/cleanup/", views.agent_cleanup, name="agent_cleanup"),
    path("agents/<int:pk>/options/", views.agent_option_add, name="agent_option_add"),
    path("agents/<int:pk>/options/remove/", views.agent_option_remove, name="agent_option_remove"),
    # links
    path("links/", views.LinkListView.as_view(), name="link_list"),
    path("links/add/", views.link_add, name="link_add"),
    path("links/<int:pk>/", views.link_detail, name="link"),
    path("links/<int:pk>/edit/", views.link_edit, name="link_edit"),
    path("links/<int:pk>/delete/", views.link_delete, name="link_delete"),
    path("links/<int:pk>/test/", views.link_test, name="link_test"),
    path("links/<int:pk>/options/", views.link_option_add, name="link_option_add"),
    path("links/<int:pk>/options/remove/", views.link_option_remove, name="link_option_remove"),
    # foreign queues
    path("foreign-queues/", views.ForeignQueueListView.as_view(), name="foreignqueue_list"),
    path("foreign-queues/add/", views.foreignqueue_add, name="foreignqueue_add"),
    path("foreign-queues/<int:pk>/delete/", views.foreignqueue_delete, name="foreignqueue_delete"),
    # jobs
    path("jobs/", views.JobListView.as_view(), name="job_list"),
    path("jobs/add/", views.job_add, name="job_add"),
    path("jobs/bulk/", bulk_page, {"registry": JOB_BULK}, name="job_bulk"),
    path("jobs/<int:pk>/", views.job_detail, name="job"),
    path("jobs/<int:pk>/status/", views.job_status, name="job_status"),
    path("jobs/<int:pk>/edit/", views.job_edit, name="job_edit"),
    path("jobs/<int:pk>/remove/", views.job_remove, name="job_remove"),
    path("jobs/<int:pk>/enable/", views.job_action, {"verb": "enable"}, name="job_enable"),
    path("jobs/<int:pk>/disable/", views.job_action, {"verb": "disable"}, name="job_disable"),
    path("jobs/<int:pk>/reset/", views.job_action, {"verb": "reset"}, name="job_reset"),
]
