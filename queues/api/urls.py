from rest_framework.routers import DefaultRouter

from queues.api import views

router = DefaultRouter()
router.register("queue-tables", views.QueueTableViewSet, basename="queuetable")
router.register("queue-table-owner-moves", views.OwnerMoveViewSet, basename="queuetableownermove")
router.register("queues", views.QueueViewSet, basename="queue")
router.register("messages", views.MessageViewSet, basename="message")
router.register("subscribers", views.SubscriberViewSet, basename="subscriber")
router.register("agents", views.AgentViewSet, basename="agent")
router.register("privileges", views.QueuePrivilegeViewSet, basename="queueprivilege")

urlpatterns = router.urls
