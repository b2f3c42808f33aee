"""One API root: every app's router registry merged under /api/."""

from rest_framework.routers import DefaultRouter

from core.api.urls import router as core_router
from core.status import REGISTRY, viewset_class
from definitions.api.urls import urlpatterns as definitions_urls
from gateway.api.urls import router as gateway_router
from instances.api.urls import router as instances_router
from jobs.api.urls import router as jobs_router
from jobs.api.urls import singletons as jobs_singletons
from monitoring.api.urls import singletons as monitoring_singletons
from parallel.api.urls import router as parallel_router
from queues.api.urls import router as queues_router
from rules.api.urls import router as rules_router
from sites.api.urls import router as sites_router

router = DefaultRouter()
for app_router in (
    queues_router,
    rules_router,
    jobs_router,
    gateway_router,
    sites_router,
    instances_router,
    parallel_router,
    core_router,
):
    router.registry.extend(app_router.registry)

# The status views are registered by each app's AppConfig.ready, which has run by URL loading.
for _name in sorted(REGISTRY):
    router.register(f"status/{_name}", viewset_class(_name), basename=f"status-{_name}")

urlpatterns = [*router.urls, *jobs_singletons, *definitions_urls, *monitoring_singletons]
