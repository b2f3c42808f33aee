from django.urls import path

from core import views

app_name = "core"

urlpatterns = [
    path("", views.ChangeLogListView.as_view(), name="changelog_list"),
    path("<int:pk>/", views.changelog_detail, name="changelog_detail"),
]
