from django.contrib.auth.middleware import LoginRequiredMiddleware as DjangoLoginRequired
from django.http import HttpRequest


class LoginRequiredMiddleware(DjangoLoginRequired):
    """Every page needs a session login. The API authenticates in DRF (token or session) and
    answers 401/403 itself, so it is left to DRF rather than redirected to the login page."""

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):  # type: ignore[no-untyped-def]
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)


class RefusalMiddleware:
    """A PermissionDenied raised by a page becomes the console's 403 page here, before Django's
    handler would log it with its traceback: a refusal is an answer, not a fault (Django still
    logs one "Forbidden: <path>" line). The API's views answer their own refusals."""

    def __init__(self, get_response):  # type: ignore[no-untyped-def]
        self.get_response = get_response

    def __call__(self, request: HttpRequest):  # type: ignore[no-untyped-def]
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception):  # type: ignore[no-untyped-def]
        from django.core.exceptions import PermissionDenied

        from core.views import forbidden

        if isinstance(exception, PermissionDenied) and not request.path_info.startswith("/api/"):
            return forbidden(request, exception)
        return None
