"""The navigation bar's menus, declared once: each group, its links and which pages mark them.

The bar had grown to seventeen flat links that wrapped onto two lines; grouped, it fits on one. A
link is marked active when the page at hand belongs to it (from the resolved URL's namespace and
name), and its group with it, so a page deep inside a section still shows where it is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.urls import reverse

# (namespace, url_name) -> does the page belong to this link?
Match = Callable[[str, str], bool]


@dataclass(frozen=True)
class Link:
    text: str  # the link's accessible name: the same text the flat bar had
    url_name: str
    match: Match
    staff_only: bool = False


@dataclass(frozen=True)
class Menu:
    label: str
    links: tuple[Link, ...]


def _ns(namespace: str) -> Match:
    return lambda ns, name: ns == namespace


def _in(namespace: str, part: str) -> Match:
    """The pages of ``namespace`` whose URL name holds ``part`` (``agent_list``, ``agent_add``)."""
    return lambda ns, name: ns == namespace and part in name


MENUS: tuple[Menu, ...] = (
    Menu(
        "Queues",
        (
            Link(
                "Queues",
                "queues:queue_list",
                lambda ns, name: (
                    ns == "queues"
                    and ("queue_" in name or "subscriber_" in name or name == "set_up_queue")
                ),
            ),
            Link(
                "Queue tables",
                "queues:queuetable_list",
                lambda ns, name: (
                    ns == "queues" and ("queuetable_" in name or name == "ownership_log")
                ),
            ),
            Link("Parallel queues", "parallel:logicalqueue_list", _ns("parallel")),
            Link("Agents", "queues:agent_list", _in("queues", "agent_")),
            Link("Privileges", "queues:privilege_list", lambda ns, name: "privilege_" in name),
        ),
    ),
    Menu(
        "Rules",
        (
            Link(
                "Rules",
                "rules:rule_list",
                lambda ns, name: ns == "rules" and "ruleset" not in name and "context" not in name,
            ),
            Link("Rule sets", "rules:ruleset_list", lambda ns, name: "ruleset" in name),
            Link("Contexts", "rules:context_list", lambda ns, name: "context_" in name),
        ),
    ),
    Menu(
        "Propagation",
        (
            Link(
                "Propagations",
                "jobs:propagation_list",
                lambda ns, name: ns == "jobs" and "worker" not in name,
            ),
            Link("Spark jobs", "spark:job_list", _ns("spark")),
            Link("Workers", "jobs:worker_list", _in("jobs", "worker")),
            # Database links are where propagations go to another site.
            Link("Database links", "sites:link_list", _ns("sites")),
        ),
    ),
    Menu(
        "Gateway",
        (
            Link("Gateway", "gateway_home", lambda ns, name: name == "gateway_home"),
            Link("Gateway agents", "gateway:agent_list", _in("gateway", "agent")),
            Link("Gateway links", "gateway:link_list", _in("gateway", "link")),
            Link("Foreign queues", "gateway:foreignqueue_list", _in("gateway", "foreignqueue")),
            Link("Gateway jobs", "gateway:job_list", _in("gateway", "job")),
        ),
    ),
    Menu(
        "Status",
        (
            Link("Status views", "status_views", lambda ns, name: "status_views" in name),
            Link("Instances", "instances:instance_list", _ns("instances")),
            Link("Change log", "core:changelog_list", _ns("core")),
        ),
    ),
    Menu(
        "Admin",
        (
            Link("Definitions", "definitions:page", _ns("definitions")),
            Link("API docs", "api-docs", lambda ns, name: name == "api-docs"),
            Link("Django admin", "admin:index", _ns("admin"), staff_only=True),
        ),
    ),
)


@dataclass(frozen=True)
class BarLink:
    text: str
    href: str
    active: bool


@dataclass(frozen=True)
class BarMenu:
    label: str
    slug: str
    links: tuple[BarLink, ...]

    @property
    def active(self) -> bool:
        return any(link.active for link in self.links)


def navigation_bar(*, namespace: str, url_name: str, is_staff: bool) -> list[BarMenu]:
    """The bar's menus for one page: the links the user may follow, the page's own marked."""
    bar = []
    for menu in MENUS:
        links = tuple(
            BarLink(link.text, reverse(link.url_name), link.match(namespace, url_name))
            for link in menu.links
            if is_staff or not link.staff_only
        )
        bar.append(BarMenu(menu.label, menu.label.lower(), links))
    return bar
