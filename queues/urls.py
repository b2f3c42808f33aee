from django.urls import path

from core.generic import bulk_page
from queues import views
from queues.bulk import QUEUE_BULK

app_name = "queues"

urlpatterns = [
    path("", views.QueueListView.as_view(), name="queue_list"),
    path("add/", views.queue_add, name="queue_add"),
    path("set-up/", views.set_up_queue, name="set_up_queue"),
    path("bulk/", bulk_page, {"registry": QUEUE_BULK}, name="queue_bulk"),
    path("<int:pk>/", views.queue_detail, name="queue_detail"),
    path("<int:pk>/edit/", views.queue_edit, name="queue_edit"),
    path("<int:pk>/delete/", views.queue_delete, name="queue_delete"),
    path("<int:pk>/start/", views.queue_toggle, {"verb": "start"}, name="queue_start"),
    path("<int:pk>/stop/", views.queue_toggle, {"verb": "stop"}, name="queue_stop"),
    path("<int:pk>/enqueue/", views.queue_enqueue, name="queue_enqueue"),
    path("<int:pk>/dequeue/", views.queue_dequeue, name="queue_dequeue"),
    path("<int:pk>/purge/", views.queue_purge, name="queue_purge"),
    path("<int:pk>/replay/", views.queue_replay, name="queue_replay"),
    path("<int:pk>/rule-test/", views.queue_rule_test, name="queue_rule_test"),
    path("<int:pk>/subscribers/add/", views.subscriber_add, name="subscriber_add"),
    path("subscribers/<int:pk>/remove/", views.subscriber_remove, name="subscriber_remove"),
    path("tables/", views.QueueTableListView.as_view(), name="queuetable_list"),
    path("tables/ownership/", views.OwnerMoveListView.as_view(), name="ownership_log"),
    path("tables/add/", views.queuetable_add, name="queuetable_add"),
    path("tables/<int:pk>/", views.queuetable_detail, name="queuetable_detail"),
    path("tables/<int:pk>/edit/", views.queuetable_edit, name="queuetable_edit"),
    path("tables/<int:pk>/delete/", views.queuetable_delete, name="queuetable_delete"),
    path("agents/", views.AgentListView.as_view(), name="agent_list"),
    path("agents/add/", views.agent_add, name="agent_add"),
    path("agents/<int:pk>/delete/", views.agent_delete, name="agent_delete"),
    path("agents/access/enable/", views.agent_access, {"verb": "enable"}, name="agent_enable"),
    path("agents/access/disable/", views.agent_access, {"verb": "disable"}, name="agent_disable"),
    path("privileges/", views.QueuePrivilegeListView.as_view(), name="privilege_list"),
    path("privileges/grant/", views.privilege_grant, name="privilege_grant"),
    path("privileges/<int:pk>/revoke/", views.privilege_revoke, name="privilege_revoke"),
]
