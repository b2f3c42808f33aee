"""The navigation bar's menus and wide tables at a laptop's width (1280 px), in a real browser.

The bar once held seventeen flat links and wrapped onto two lines even at 1440 px; wide tables
(status views, message lists) must scroll inside their own box, never widen the page.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.browser.helpers import shot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1280, "height": 800}

# Each menu of the bar and its links, in order, as an administrator sees them.
MENUS = {
    "Queues": ["Queues", "Queue tables", "Parallel queues", "Agents", "Privileges"],
    "Rules": ["Rules", "Rule sets", "Contexts"],
    "Propagation": ["Propagations", "Spark jobs", "Workers", "Database links"],
    "Gateway": ["Gateway", "Gateway agents", "Gateway links", "Foreign queues", "Gateway jobs"],
    "Status": ["Status views", "Instances", "Change log"],
    "Admin": ["Definitions", "API docs"],
}
# Pages with their own layout (Swagger UI's), without the console's bar to mark.
OWN_LAYOUT = {"API docs"}


def menu(page, label: str):  # type: ignore[no-untyped-def]
    return page.locator(f'#nav-menus details[data-menu="{label.lower()}"]')


def console_errors(page) -> list[str]:  # type: ignore[no-untyped-def]
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    return errors


def test_the_bar_fits_on_one_line_at_1280_px(page, live_server, login, admin_user):
    page.set_viewport_size(LAPTOP)
    login(page, "alice", "pw-alice")
    for path in ("/", "/queues/", "/status/?view=dba_queues"):
        page.goto(f"{live_server.url}{path}")
        bar = page.locator("nav.navbar").bounding_box()
        # Every part of the bar: the brand, each top-level item, the site, the user, log out.
        parts = page.locator(
            "nav.navbar :is(.navbar-brand, .navbar-nav > .nav-item, #global-name, .navbar-text,"
            " form button)"
        )
        boxes = [parts.nth(i).bounding_box() for i in range(parts.count())]
        assert all(box is not None for box in boxes), "every part of the bar is shown"
        # One row: every part's middle at the same height, all inside the window, and the bar
        # no taller than its tallest part plus its padding (two rows would double it).
        middles = [box["y"] + box["height"] / 2 for box in boxes]
        assert max(middles) - min(middles) <= 2, f"{path}: the bar wraps: {middles}"
        assert max(box["x"] + box["width"] for box in boxes) <= LAPTOP["width"]
        tallest = max(box["height"] for box in boxes)
        assert bar["height"] < 2 * tallest, f"{path}: the bar is {bar['height']}px tall"
        expect(parts).to_have_count(1 + len(MENUS) + 3)
        expect(page.locator("#nav-menus details > summary")).to_have_text(list(MENUS))
    shot(page, "nav-01-bar-at-1280")


def test_every_menu_item_opens_its_page_and_marks_its_menu(
    page, live_server, login, admin_user, page_problems
):
    page.set_viewport_size(LAPTOP)
    errors = console_errors(page)
    login(page, "alice", "pw-alice")
    for label, items in MENUS.items():
        for item in items:
            page.goto(f"{live_server.url}/")
            group = menu(page, label)
            expect(group.locator(".dropdown-menu")).to_be_hidden()
            group.locator("summary").click()
            expect(group.locator(".dropdown-menu")).to_be_visible()
            expect(group.get_by_role("link")).to_have_text(items)
            with page.expect_response(
                lambda r: r.request.is_navigation_request() and r.request.method == "GET"
            ) as answer:
                group.get_by_role("link", name=item, exact=True).click()
            assert answer.value.status == 200, f"{label} > {item}: {answer.value.status}"
            page.wait_for_load_state("load")
            if item in OWN_LAYOUT:
                continue
            # The page at hand is marked: its menu in the bar, its link inside the menu.
            expect(page.locator(".navbar .nav-link.active")).to_have_text([label])
            current = page.locator('#nav-menus a[aria-current="page"]')
            expect(current).to_have_text([item])
            expect(current).to_have_class("dropdown-item active")
            if label == "Queues" and item == "Queues":
                shot(page, "nav-02-queues-page")
    assert not errors, f"console errors: {errors}"
    page_problems.assert_none()


def test_menus_close_on_escape_and_outside_click_and_work_from_the_keyboard(
    page, live_server, login, admin_user, page_problems
):
    page.set_viewport_size(LAPTOP)
    login(page, "alice", "pw-alice")
    queues, rules = menu(page, "Queues"), menu(page, "Rules")

    queues.locator("summary").click()
    expect(queues.locator(".dropdown-menu")).to_be_visible()
    shot(page, "nav-03-queues-menu-open")
    page.keyboard.press("Escape")
    expect(queues.locator(".dropdown-menu")).to_be_hidden()
    expect(queues.locator("summary")).to_be_focused()

    # One menu open at a time; a click elsewhere closes it.
    queues.locator("summary").click()
    rules.locator("summary").click()
    expect(rules.locator(".dropdown-menu")).to_be_visible()
    expect(queues.locator(".dropdown-menu")).to_be_hidden()
    page.locator("h1").click()
    expect(rules.locator(".dropdown-menu")).to_be_hidden()

    # From the keyboard: focus the menu, open it, arrow down to an item, follow it.
    rules.locator("summary").focus()
    page.keyboard.press("Enter")
    expect(rules.locator(".dropdown-menu")).to_be_visible()
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    expect(rules.get_by_role("link", name="Rule sets")).to_be_focused()
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Rule sets")).to_be_visible()
    expect(page.locator(".navbar .nav-link.active")).to_have_text(["Rules"])
    page_problems.assert_none()


@pytest.fixture
def wide_queues(admin_user):  # type: ignore[no-untyped-def]
    from queues import engine, services

    comment = "a long free-text comment about who feeds this queue and who reads it " * 4
    qt = services.queue_table_create(
        user=admin_user,
        name="QT_ORDERS_FROM_THE_EUROPEAN_WEB_SHOPS_AND_MARKETPLACES",
        sort_order="enq_time",
        comment=comment,
    )
    queues = [
        services.queue_create(
            user=admin_user,
            name=f"ORDERS_FROM_THE_EUROPEAN_WEB_SHOP_NUMBER_{i}_FOR_FULFILMENT",
            queue_table=qt,
            comment=comment,
        )
        for i in range(3)
    ]
    services.message_enqueue(
        user=admin_user,
        queue=queues[0],
        messages=[
            engine.NewMessage(
                payload={"note": "word " * 400, "sku": "X" * 300},
                correlation="C" * 100,
                sender="shop",
            )
        ],
    )
    return queues


def wrapper_of(page, selector: str) -> dict:  # type: ignore[no-untyped-def]
    """The sizes of the scrolling box around the first table under ``selector``, and whether it
    scrolls sideways by itself."""
    return page.evaluate(
        """selector => {
            const box = document.querySelector(selector + " table").closest(".table-responsive");
            const sizes = {scrollWidth: box.scrollWidth, clientWidth: box.clientWidth};
            box.scrollLeft = box.scrollWidth;
            sizes.scrolledTo = box.scrollLeft;
            box.scrollLeft = 0;
            return sizes;
        }""",
        selector,
    )


def page_width(page) -> tuple[int, int]:  # type: ignore[no-untyped-def]
    return page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")


def test_wide_tables_scroll_inside_their_box_not_the_page(
    page, live_server, login, admin_user, wide_queues, page_problems
):
    page.set_viewport_size(LAPTOP)
    login(page, "alice", "pw-alice")

    for view in ("dba_queues", "dba_queue_tables"):
        page.goto(f"{live_server.url}/status/?view={view}")
        expect(page.locator("#status-table tbody tr").first).to_contain_text("ORDERS_FROM_THE")
        width, window = page_width(page)
        assert width <= window, f"{view}: the page is {width}px wide in a {window}px window"
        box = wrapper_of(page, "#status-table")
        assert box["scrollWidth"] > box["clientWidth"], f"{view}: the table is not wider: {box}"
        assert box["scrolledTo"] > 0, f"{view}: its box does not scroll sideways: {box}"
        # The comment wraps at a readable width instead of making one very wide column.
        comment = page.locator("#status-table td .aq-wrap").first.bounding_box()
        assert comment is not None and comment["width"] <= 36 * 16 + 1
        assert comment["height"] > 30, "the long comment wraps onto several lines"
    shot(page, "nav-04-wide-status-view")

    # A message list with a long payload and correlation: the payload wraps, the page stays put.
    page.goto(f"{live_server.url}{wide_queues[0].get_absolute_url()}")
    payload = page.locator("#message-table .aq-payload").first
    expect(payload).to_contain_text("word word")
    width, window = page_width(page)
    assert width <= window, f"the queue page is {width}px wide in a {window}px window"
    assert payload.bounding_box()["width"] <= 36 * 16 + 1
    box = wrapper_of(page, "#message-table")
    assert box["clientWidth"] <= window
    shot(page, "nav-05-wide-message-list")
    page_problems.assert_none()


def no_sideways_overflow(page, where: str) -> None:  # type: ignore[no-untyped-def]
    width, window = page.evaluate("[document.scrollingElement.scrollWidth, window.innerWidth]")
    assert width <= window, f"{where}: the page is {width}px wide in a {window}px window"


@pytest.mark.parametrize("width", [1280, 1000, 800, 390])
def test_below_1000_px_the_menus_fold_behind_one_menu_button(
    page, live_server, login, admin_user, page_problems, width, settings
):
    # A long global name (they run to 255 characters): the bar still fits the window.
    settings.AQ_GLOBAL_NAME = "ORDERS_PRIMARY_DATABASE.EU_WEST_1.PRODUCTION.EXAMPLE.COM"
    page.set_viewport_size({"width": width, "height": 800})
    login(page, "alice", "pw-alice")
    toggle = page.locator("#nav-toggle")
    summaries = page.locator("#nav-menus details > summary")
    for path in ("/", "/queues/", "/sites/", "/propagations/"):
        page.goto(f"{live_server.url}{path}")
        no_sideways_overflow(page, f"{path} at {width}px")
        # ... and once the page is taller than the window. (Headless chromium hides scroll
        # bars, so this does not take a scroll bar's width off the window: it checks only that
        # the taller layout widens nothing.)
        page.evaluate("document.body.style.minHeight = '3000px'")
        no_sideways_overflow(page, f"{path} at {width}px with a scroll bar")

    page.goto(f"{live_server.url}/")
    if width >= 1000:
        # Wide: no button, the six menus in one row.
        expect(toggle).to_be_hidden()
        expect(summaries).to_have_count(len(MENUS))
        tops = {round(summaries.nth(i).bounding_box()["y"]) for i in range(len(MENUS))}
        assert len(tops) == 1, f"the menus are not in one row: {tops}"
        # The site, the user and "Log out" show whole inside the window, the name shortened.
        expect(page.locator("#global-name")).to_have_attribute(
            "title", re.compile("ORDERS_PRIMARY_DATABASE.EU_WEST_1.PRODUCTION.EXAMPLE.COM$")
        )
        # ... side by side, with the long name and the default one: where they do not fit
        # beside the menus they wrap as one (the default name left "Log out" alone at 1,000 px).
        for name in (settings.AQ_GLOBAL_NAME, "AQCONSOLE.LOCALHOST"):
            settings.AQ_GLOBAL_NAME = name
            page.goto(f"{live_server.url}/")
            middles = []
            for part in ("#global-name", ".navbar-text", "nav form button"):
                box = page.locator(part).bounding_box()
                assert box and box["x"] >= 0 and box["x"] + box["width"] <= width, (name, part)
                middles.append(box["y"] + box["height"] / 2)
            assert max(middles) - min(middles) <= 2, f"{name}: site, user, log out split: {middles}"
    else:
        # Narrow: only the brand and the button; the button opens the groups, stacked.
        expect(summaries.first).to_be_hidden()
        expect(page.locator("#global-name")).to_be_hidden()
        expect(toggle).to_be_visible()
        expect(toggle).to_have_attribute("aria-expanded", "false")
        toggle.click()
        expect(toggle).to_have_attribute("aria-expanded", "true")
        boxes = [summaries.nth(i).bounding_box() for i in range(len(MENUS))]
        assert all(b is not None for b in boxes), "every group shows once the menu is open"
        lefts = {round(b["x"]) for b in boxes}
        tops = [b["y"] for b in boxes]
        assert len(lefts) == 1 and tops == sorted(tops) and len(set(tops)) == len(MENUS), (
            f"the groups are not stacked: {boxes}"
        )
        assert all(b["x"] + b["width"] <= width for b in boxes)
        no_sideways_overflow(page, f"the open menu at {width}px")
        # Escape folds it back, the focus on the button; from the keyboard it opens again.
        page.keyboard.press("Escape")
        expect(toggle).to_have_attribute("aria-expanded", "false")
        expect(summaries.first).to_be_hidden()
        expect(toggle).to_be_focused()
        page.keyboard.press("Enter")
        expect(toggle).to_have_attribute("aria-expanded", "true")
        expect(summaries.first).to_be_visible()
        shot(page, f"nav-06-menu-open-at-{width}")

    # A group opens and its link is followed, as at any width.
    queues = menu(page, "Queues")
    queues.locator("summary").click()
    item = queues.get_by_role("link", name="Queue tables", exact=True)
    expect(item).to_be_visible()
    box = item.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    no_sideways_overflow(page, f"the open Queues group at {width}px")
    item.click()
    expect(page.get_by_role("heading", name="Queue tables")).to_be_visible()
    expect(page.locator('#nav-menus a[aria-current="page"]')).to_have_text(["Queue tables"])
    page_problems.assert_none()
