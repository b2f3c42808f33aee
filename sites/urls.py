"""Sites pages under /sites/ (namespace "sites"): the database links."""

from django.urls import path

from sites import views

app_name = "sites"

urlpatterns = [
    path("", views.DatabaseLinkListView.as_view(), name="link_list"),
    path("links/add/", views.link_add, name="link_add"),
    path("links/<int:pk>/", views.link_detail, name="link"),
    path("links/<int:pk>/edit/", views.link_edit, name="link_edit"),
    path("links/<int:pk>/delete/", views.link_delete, name="link_delete"),
    path("links/<int:pk>/test/", views.link_test, name="link_test"),
]
