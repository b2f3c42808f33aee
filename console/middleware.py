from django.contrib.auth.middleware import LoginRequiredMiddleware as DjangoLoginRequired
from django.http import HttpRequest


class LoginRequiredMiddleware(DjangoLoginRequired):
    """Every page needs a session login. The API authenticates in DRF (token or session) and
    answers 401/403 itself, so it is left to DRF rather than redirected to the login page."""

    def process_view(self, request: HttpRequest, view_func, view_args, view_kwargs):  # type: ignore[no-untyped-def]
        if request.path_info.startswith("/api/"):
            return None
        return super().process_view(request, view_func, view_args, view_kwargs)
