from rest_framework.routers import DefaultRouter

from queues.api import views

router = DefaultRouter()
router.register("queue-tables", views.QueueTableViewSet, basename="queuetable")
router.register("queues", views.QueueViewSet, basename="queue")
router.register("messages", views.MessageViewSet, basename="message")
router.register("subscribers", views.SubscriberViewSet, basename="subscriber")
router.register("agents", views.AgentViewSet, basename="agent")
router.register("privileges", views.QueuePrivilegeViewSet, basename="queueprivilege")
router.register("status/dba_queue_tables", views.DbaQueueTablesViewSet, basename="dba-queue-tables")
router.register("status/dba_queues", views.DbaQueuesViewSet, basename="dba-queues")
router.register(
    "status/dba_aq_agent_privs", views.DbaAqAgentPrivsViewSet, basename="dba-aq-agent-privs"
)

urlpatterns = router.urls
