from rest_framework.routers import DefaultRouter

from parallel.api import views

router = DefaultRouter()
router.register("logical-queues", views.LogicalQueueViewSet, basename="logicalqueue")
router.register(
    "logical-queue-partitions", views.PartitionViewSet, basename="logicalqueuepartition"
)

urlpatterns = router.urls
