"""The real portal (gunicorn as the service account, on this test's database) in Debian's Chromium, driven
by Playwright, one signed-in browser context per persona. No browser is downloaded: Playwright launches
/usr/bin/chromium (scripts/prereqs installs the `chromium` package)."""

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from django.test import Client
from playwright.sync_api import Browser, Page, sync_playwright

from tests.service_account import Portal, running_portal, service_media  # noqa: F401 (a fixture)

CHROMIUM = "/usr/bin/chromium"
AXE = Path(__file__).parent / "vendor" / "axe.min.js"
#: axe-core impacts a page may not have.
BLOCKING_IMPACTS = ("critical", "serious")
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    # Playwright's sync API keeps an asyncio loop on the test's thread, which Django takes for async code and
    # refuses database calls in; the tests' own database calls are plain synchronous ones (Playwright's advice).
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        # Chromium refuses to run as root with its sandbox; the test suite runs as root.
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()
    del os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"]


@pytest.fixture
def portal_env() -> dict[str, str]:
    """More environment for the portal's processes: a test module overrides this fixture to change a setting."""
    return {}


@pytest.fixture
def portal(transactional_db, settings, service_media, tmp_path, portal_env) -> Iterator[Portal]:  # noqa: F811
    """The portal's web server; it reads committed rows only, hence transactional_db. Its static files are
    collected first, as a deployment does (whitenoise serves STATIC_ROOT when DEBUG is off)."""
    static_root = service_media / "static"
    settings.STATIC_ROOT = static_root
    call_command("collectstatic", interactive=False, verbosity=0)
    env = {"LABQUEUE_STATIC_ROOT": str(static_root), **portal_env}
    with running_portal(settings, tmp_path, workers=0, **env) as running:
        yield running


@pytest.fixture
def page_for(browser: Browser, portal: Portal) -> Iterator[Callable[..., Page]]:
    """`page_for(user, viewport=...)`: a page in a browser context signed in as `user` (a session made by
    Django's test client, its cookie set in the context, as Portal.browser_for does)."""
    contexts = []

    def open_page(user, viewport: dict | None = None) -> Page:
        login = Client()
        login.force_login(user)
        name = django_settings.SESSION_COOKIE_NAME
        # The portal's Content-Security-Policy allows scripts from static/ only: bypassing it lets the tests
        # inject axe-core; the pages' own scripts run as they would anyway.
        context = browser.new_context(
            base_url=portal.base, viewport=viewport or {"width": 1280, "height": 900}, bypass_csp=True
        )
        context.add_cookies([{"name": name, "value": login.cookies[name].value, "url": portal.base}])
        contexts.append(context)
        return context.new_page()

    yield open_page
    for context in contexts:
        context.close()


def axe_violations(page: Page) -> list[str]:
    """axe-core's critical and serious violations on the page, one line each (rule, impact, where)."""
    page.add_script_tag(path=str(AXE))
    found = page.evaluate("async () => (await axe.run(document)).violations")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[node['target'] for node in v['nodes']][:5]}"
        for v in found
        if v["impact"] in BLOCKING_IMPACTS
    ]
