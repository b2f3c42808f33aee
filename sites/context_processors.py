from django.http import HttpRequest

from sites.selectors import local_global_name


def global_name(request: HttpRequest) -> dict[str, str]:
    """Every page's header names the site it belongs to (no query: the setting)."""
    return {"global_name": local_global_name()}
