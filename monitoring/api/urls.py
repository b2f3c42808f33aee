from django.urls import path

from monitoring.api import views

singletons = [path("rates/", views.RatesView.as_view(), name="rates")]
