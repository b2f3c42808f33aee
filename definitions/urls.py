from django.urls import path

from definitions import views

app_name = "definitions"

urlpatterns = [
    path("", views.page, name="page"),
    path("export/", views.export, name="export"),
]
