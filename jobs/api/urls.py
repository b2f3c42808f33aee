from django.urls import path
from rest_framework.routers import DefaultRouter

from jobs.api import views

router = DefaultRouter()
router.register("propagations", views.PropagationViewSet, basename="propagation")
router.register("propagation-runs", views.PropagationRunViewSet, basename="propagationrun")
router.register("workers", views.WorkerViewSet, basename="worker")
router.register("spark-jobs", views.SparkJobViewSet, basename="sparkjob")

# One-of-a-kind resources, not collections: plain views the merged API router cannot hold.
singletons = [
    path("maintenance/", views.MaintenanceView.as_view(), name="maintenance"),
    path("topology/", views.TopologyView.as_view(), name="topology"),
    path("attention/", views.AttentionView.as_view(), name="attention"),
    path("trace/", views.TraceView.as_view(), name="trace"),
]

urlpatterns = [*singletons, *router.urls]
