"""Instances pages under /instances/ (namespace "instances")."""

from django.urls import path

from instances import views

app_name = "instances"

urlpatterns = [
    path("", views.InstanceListView.as_view(), name="instance_list"),
]
