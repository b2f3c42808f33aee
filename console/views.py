from django.http import HttpRequest, HttpResponse
from django.shortcuts import render


def dashboard(request: HttpRequest) -> HttpResponse:
    return render(request, "console/dashboard.html")


def not_built(request: HttpRequest, *, area: str, issue: int) -> HttpResponse:
    return render(request, "console/not_built.html", {"area": area, "issue": issue})
