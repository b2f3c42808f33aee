from rest_framework.routers import DefaultRouter

from sites.api import views

router = DefaultRouter()
router.register("db-links", views.DatabaseLinkViewSet, basename="db-link")

urlpatterns = router.urls
