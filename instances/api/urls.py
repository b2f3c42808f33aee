from rest_framework.routers import DefaultRouter

from instances.api import views

router = DefaultRouter()
router.register("instances", views.InstanceViewSet, basename="instance")

urlpatterns = router.urls
