from rest_framework.routers import DefaultRouter

from gateway.api import views

# Under /api/gateway/: the AQ agents already own /api/agents/.
router = DefaultRouter()
router.register("gateway/agents", views.AgentViewSet, basename="mgw-agent")
router.register("gateway/links", views.LinkViewSet, basename="mgw-link")
router.register("gateway/foreign-queues", views.ForeignQueueViewSet, basename="mgw-foreignqueue")
router.register("gateway/jobs", views.JobViewSet, basename="mgw-job")

urlpatterns = router.urls
