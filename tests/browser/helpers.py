"""Helpers of the browser tests: screenshots to ``test-artifacts/`` and HTMX submits."""

from __future__ import annotations

import re
from pathlib import Path

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
TIMEOUT_MS = 20_000


def artifact_path(name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / (re.sub(r"[^A-Za-z0-9_.-]+", "_", name) + ".png")


def shot(page, name: str) -> None:  # type: ignore[no-untyped-def]
    """Save a full-page screenshot as ``test-artifacts/<name>.png``."""
    page.screenshot(path=str(artifact_path(name)), full_page=True)


def htmx_submit(page, button, path_part: str) -> None:  # type: ignore[no-untyped-def]
    """Click an HTMX form's button and wait until its response has arrived and been swapped in,
    so that what the test looks at next is the new content, not the old."""
    with page.expect_response(lambda r: path_part in r.url and r.request.method == "POST"):
        button.click()
    page.wait_for_function(
        "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"
    )


def nav(page, menu: str, item: str) -> None:  # type: ignore[no-untyped-def]
    """Follow a link of the navigation bar: open its menu (``"Queues"``), click its item
    (``"Queue tables"``) by its accessible name, as a person would."""
    group = page.locator(f'#nav-menus details[data-menu="{menu.lower()}"]')
    if not group.evaluate("menu => menu.open"):
        group.locator("summary").click()
    group.get_by_role("link", name=item, exact=True).click()
