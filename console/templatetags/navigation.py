from __future__ import annotations

from django import template

from console.navigation import navigation_bar

register = template.Library()


@register.inclusion_tag("console/_navigation.html", takes_context=True)
def navigation_menus(context: template.Context) -> dict:
    request = context.get("request")
    if request is None:  # a page rendered without its request has no page to mark
        return {"menus": navigation_bar(namespace="", url_name="", is_staff=False)}
    match = request.resolver_match
    return {
        "menus": navigation_bar(
            namespace=(match.namespace if match else "") or "",
            url_name=(match.url_name if match else "") or "",
            is_staff=request.user.is_staff,
        )
    }
