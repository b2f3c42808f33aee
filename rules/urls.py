from django.urls import path

from rules import views

app_name = "rules"

urlpatterns = [
    path("", views.RuleListView.as_view(), name="rule_list"),
    path("add/", views.rule_add, name="rule_add"),
    path("check/", views.condition_check, name="condition_check"),
    path("generate/", views.generate, name="generate"),
    path("generate/<str:kind>/", views.generate, name="generate_kind"),
    path("<int:pk>/", views.rule_detail, name="rule_detail"),
    path("<int:pk>/edit/", views.rule_edit, name="rule_edit"),
    path("<int:pk>/delete/", views.rule_delete, name="rule_delete"),
    path(
        "<int:pk>/transformations/add/",
        views.rule_transformation_add,
        name="rule_transformation_add",
    ),
    path(
        "<int:pk>/transformations/<int:transformation_pk>/remove/",
        views.rule_transformation_remove,
        name="rule_transformation_remove",
    ),
    path(
        "<int:pk>/transformations/custom/",
        views.rule_custom_transformation,
        name="rule_custom_transformation",
    ),
    path(
        "<int:pk>/transformations/custom/clear/",
        views.rule_custom_transformation_clear,
        name="rule_custom_transformation_clear",
    ),
    path("sets/", views.RuleSetListView.as_view(), name="ruleset_list"),
    path("sets/add/", views.ruleset_add, name="ruleset_add"),
    path("sets/<int:pk>/", views.ruleset_detail, name="ruleset_detail"),
    path("sets/<int:pk>/test/", views.ruleset_test, name="ruleset_test"),
    path("sets/<int:pk>/edit/", views.ruleset_edit, name="ruleset_edit"),
    path("sets/<int:pk>/delete/", views.ruleset_delete, name="ruleset_delete"),
    path("sets/<int:pk>/rules/add/", views.ruleset_add_rule, name="ruleset_add_rule"),
    path(
        "sets/<int:pk>/rules/<int:rule_pk>/remove/",
        views.ruleset_remove_rule,
        name="ruleset_remove_rule",
    ),
    path("contexts/", views.ContextListView.as_view(), name="context_list"),
    path("contexts/add/", views.context_add, name="context_add"),
    path("contexts/<int:pk>/", views.context_detail, name="context_detail"),
    path("contexts/<int:pk>/delete/", views.context_delete, name="context_delete"),
]
