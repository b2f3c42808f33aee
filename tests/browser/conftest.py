"""Browser tests: Debian's chromium driven by Playwright against pytest-django's live server.

Chromium is never downloaded by a test tool here: the tests drive ``/usr/bin/chromium`` (the
``chromium`` Debian package, which the test command installs). When a test fails, a screenshot of
its page goes to ``test-artifacts/``; :func:`shot` saves named screenshots of the walkthrough.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser.helpers import ARTIFACTS, TIMEOUT_MS, shot

# Playwright's sync API keeps an event loop running in the main thread while the session-scoped
# browser lives (to the end of the session), and Django then refuses synchronous ORM calls in that
# thread: the browser tests' own (fixtures, checks on what was written) and those of any test that
# runs after them. They are plain synchronous code, never run inside the loop, so the check is off.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = Path(os.environ.get("AQ_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):  # type: ignore[no-untyped-def]
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report


@pytest.fixture(scope="session")
def browser() -> Iterator:
    for old in ARTIFACTS.glob("FAILED-*.png"):  # failures of an earlier run
        old.unlink()
    if not CHROMIUM.exists():
        pytest.skip(
            f"{CHROMIUM} is missing: install Debian's chromium package (apt-get install chromium)"
        )
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=TIMEOUT_MS)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


class PageProblems:
    """What went wrong in the page beyond what a test looks at: script errors, failed loads."""

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.failed: list[str] = []

    def assert_none(self) -> None:
        assert not self.errors, f"script errors in the page: {self.errors}"
        assert not self.failed, f"resources that failed to load: {self.failed}"


@pytest.fixture
def page_problems() -> PageProblems:
    return PageProblems()


@pytest.fixture
def page(browser, request, page_problems) -> Iterator:  # type: ignore[no-untyped-def]
    """A fresh browser context (no cookies) and page; screenshot to test-artifacts/ on failure."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    pg = context.new_page()
    pg.on("pageerror", lambda exc: page_problems.errors.append(str(exc)))
    pg.on(
        "response",
        lambda r: (
            page_problems.failed.append(f"{r.status} {r.url}")
            if "/static/" in r.url and r.status >= 400
            else None
        ),
    )
    # A fetch still in flight when the test moves to the next page is aborted by the browser
    # (net::ERR_ABORTED, e.g. a chart's data): that is the navigation, not a failed load.
    pg.on(
        "requestfailed",
        lambda r: (
            None
            if r.failure == "net::ERR_ABORTED"
            else page_problems.failed.append(f"failed {r.url}")
        ),
    )
    yield pg
    failed = any(
        getattr(request.node, f"rep_{when}", None) is not None
        and getattr(request.node, f"rep_{when}").failed
        for when in ("setup", "call")
    )
    if failed:
        try:
            shot(pg, f"FAILED-{request.node.name}")
        except Exception as exc:  # the page may be gone; the test's own error matters more
            print(f"could not save a failure screenshot: {exc}")
    context.close()


@pytest.fixture(autouse=True)
def _role_groups(transactional_db) -> None:
    """The role groups come from a data migration; a transactional test's flush removes them."""
    from django.contrib.auth.models import Group

    from core.choices import Role

    for role in Role.values:
        Group.objects.get_or_create(name=role)


@pytest.fixture
def login(live_server):  # type: ignore[no-untyped-def]
    """Log in through the login form: ``login(page, "alice", "pw-alice")``."""

    def _login(pg, username: str, password: str) -> None:  # type: ignore[no-untyped-def]
        pg.goto(f"{live_server.url}/login/")
        pg.get_by_label("Username").fill(username)
        pg.get_by_label("Password").fill(password)
        pg.get_by_role("button", name="Log in").click()
        pg.wait_for_url(f"{live_server.url}/")
        assert pg.locator(".navbar-text").inner_text().strip() == username

    return _login
