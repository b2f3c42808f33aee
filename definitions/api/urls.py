from django.urls import path

from definitions.api.views import DefinitionsView

urlpatterns = [path("definitions/", DefinitionsView.as_view(), name="definitions")]
