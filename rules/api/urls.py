from rest_framework.routers import DefaultRouter

from rules.api import views

router = DefaultRouter()
router.register("evaluation-contexts", views.EvaluationContextViewSet, basename="evaluationcontext")
router.register("rules", views.RuleViewSet, basename="rule")
router.register("rule-sets", views.RuleSetViewSet, basename="ruleset")

urlpatterns = router.urls
