"""One API root: every app's router registry merged under /api/."""

from rest_framework.routers import DefaultRouter

from core.api.urls import router as core_router
from queues.api.urls import router as queues_router
from rules.api.urls import router as rules_router

router = DefaultRouter()
for app_router in (queues_router, rules_router, core_router):
    router.registry.extend(app_router.registry)

urlpatterns = router.urls
