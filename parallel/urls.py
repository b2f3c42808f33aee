"""Parallel-queue pages under /queues/parallel/ (namespace "parallel"): a section of Queues."""

from django.urls import path

from parallel import views

app_name = "parallel"

urlpatterns = [
    path("", views.LogicalQueueListView.as_view(), name="logicalqueue_list"),
    path("add/", views.logicalqueue_add, name="logicalqueue_add"),
    path("<int:pk>/", views.logicalqueue_detail, name="logicalqueue_detail"),
    path("<int:pk>/rebuild/", views.logicalqueue_rebuild, name="logicalqueue_rebuild"),
    path("<int:pk>/delete/", views.logicalqueue_delete, name="logicalqueue_delete"),
    path("partitions/<int:pk>/purpose/", views.partition_purpose, name="partition_purpose"),
]
