from rest_framework.routers import DefaultRouter

from core.api import views

router = DefaultRouter()
router.register("changelog", views.ChangeLogViewSet, basename="changelog")

urlpatterns = router.urls
