"""The Content Security Policy on real HTTP responses of the running portal, and pages it leaves working:
scripts and styles only from the portal's own static files, so an inline <script>, <style>, style= or
on...= handler (an injected one included) is blocked by the browser. Every script and stylesheet a page
names is served from static/, and the job page still polls its status with htmx from there."""

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
import requests
from django.contrib.auth import get_user_model
from django.urls import reverse

from tests.conftest import job_row

User = get_user_model()
TEMPLATES = Path(__file__).resolve().parents[2] / "templates"


def directives(response: requests.Response) -> dict[str, list[str]]:
    policy = response.headers["Content-Security-Policy"]
    return {name: values for name, *values in (part.split() for part in policy.split(";") if part.strip())}


class _Page(HTMLParser):
    """What the CSP decides on: inline scripts, styles and handlers, and the files scripts and styles come from."""

    def __init__(self) -> None:
        super().__init__()
        self.inline: list[str] = []
        self.files: list[str] = []
        self.htmx_polls = False
        self.htmx_config = ""
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for name, value in attrs.items():
            if name == "style" or name.startswith("on") or (value or "").strip().lower().startswith("javascript:"):
                self.inline.append(f"<{tag} {name}={value!r}>")
        if tag == "style":
            self.inline.append("<style>")
        elif tag == "script" and attrs.get("src"):
            self.files.append(attrs["src"])
        elif tag == "script":
            self._in_script = True
        elif tag == "link" and attrs.get("rel") == "stylesheet":
            self.files.append(attrs["href"])
        elif tag == "meta" and attrs.get("name") == "htmx-config":
            self.htmx_config = attrs["content"]
        self.htmx_polls = self.htmx_polls or "hx-get" in attrs and "every" in attrs.get("hx-trigger", "")

    def handle_data(self, data):
        if self._in_script and data.strip():
            self.inline.append(f"<script>{data.strip()[:60]}")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False


def page(response: requests.Response) -> _Page:
    parsed = _Page()
    parsed.feed(response.text)
    return parsed


def browser_of(client, user) -> requests.Session:
    """A browser signed in as `user` (the session cookie of a real sign-in)."""
    client.force_login(user)
    session = requests.Session()
    session.cookies.set("sessionid", client.cookies["sessionid"].value)
    return session


def assert_only_own_scripts_and_styles(response: requests.Response) -> None:
    policy = directives(response)
    assert policy["default-src"] == ["'self'"]
    assert policy["script-src"] == ["'self'"], "no 'unsafe-inline', 'unsafe-eval', nonce or hash: no inline code"
    assert policy["style-src"] == ["'self'"]
    assert policy["object-src"] == ["'none'"] and policy["base-uri"] == ["'none'"]
    assert policy["frame-ancestors"] == ["'none'"]
    assert "'unsafe-inline'" not in response.headers["Content-Security-Policy"]


def test_the_sign_in_page_carries_the_policy_and_has_nothing_inline(live_server, db):
    response = requests.get(f"{live_server.url}/accounts/login/", timeout=10)

    assert response.status_code == 200
    assert_only_own_scripts_and_styles(response)
    assert page(response).inline == []


def test_the_job_page_polls_with_htmx_from_static_files_under_the_policy(live_server, client, student, assignment):
    job = job_row(student, assignment)
    browser = browser_of(client, student)

    response = browser.get(live_server.url + reverse("jobs:job-detail", args=[job.uuid]), timeout=10)
    status = browser.get(live_server.url + reverse("jobs:job-status", args=[job.uuid]), timeout=10)

    assert response.status_code == 200 and status.status_code == 200
    assert_only_own_scripts_and_styles(response)
    assert_only_own_scripts_and_styles(status)
    parsed = page(response)
    assert parsed.inline == [] and page(status).inline == []
    assert parsed.htmx_polls, "the live status still polls"
    assert '"includeIndicatorStyles": false' in parsed.htmx_config and '"allowEval": false' in parsed.htmx_config
    assert sorted(parsed.files) == ["/static/labqueue.css", "/static/labqueue.js", "/static/vendor/htmx.min.js"]
    for path in parsed.files:
        assert browser.get(live_server.url + path, timeout=10).status_code == 200, path


@pytest.mark.parametrize("url", [reverse("jobs:job-list"), reverse("jobs:course-jobs", args=["cs101"])])
def test_the_job_filters_submit_through_the_portals_script_not_an_inline_handler(live_server, client, ta, url):
    browser = browser_of(client, ta)

    response = browser.get(live_server.url + url, timeout=10)

    assert response.status_code == 200 and page(response).inline == []
    assert "data-autosubmit" in response.text
    script = browser.get(f"{live_server.url}/static/labqueue.js", timeout=10).text
    assert "data-autosubmit" in script and "requestSubmit" in script


def test_the_admin_carries_the_policy_too(live_server, client, db):
    browser = browser_of(client, User.objects.create(username="ops", is_staff=True, is_superuser=True))

    response = browser.get(f"{live_server.url}/admin/portal/user/", timeout=10)

    assert response.status_code == 200
    assert_only_own_scripts_and_styles(response)
    assert page(response).inline == []


INLINE = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>|<style\b|\sstyle=|\son[a-z]+=|javascript:", re.IGNORECASE)


@pytest.mark.parametrize(
    "template", sorted(TEMPLATES.rglob("*.html")), ids=lambda path: str(path.relative_to(TEMPLATES))
)
def test_no_template_holds_code_the_policy_would_block(template):
    """Pages no test above renders too (reports, statements, lab sessions...): none may rely on inline code."""
    assert INLINE.findall(template.read_text()) == []
