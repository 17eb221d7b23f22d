"""A notebook session in Chromium, through nginx as production runs it: gunicorn, a Celery worker and beat as the
service account, nginx with the shipped template in front (tests/interactive/proxy.py), JupyterLab really started
as the student's job on the lab cluster.

The student starts a session from the assignment page, opens it from the job page, runs a cell that prints
CUDA_VISIBLE_DEVICES and the user name (the student's), saves the notebook (it appears in the job's files) and
stops the session: the job leaves squeue and the session's address answers 404. Meanwhile a classmate, a TA
(the course does not let staff in) and a signed-out browser get 404 there, a WebSocket opened with another site's
Origin is refused where the portal's own is accepted, and no response or WebSocket frame the browser receives
holds the server's token."""

import http.client
import re
import subprocess
from urllib.parse import urlsplit

import pytest
import requests
from django.conf import settings as django_settings
from django.test import Client
from playwright.sync_api import expect

from jobs.models import InteractiveSession, Job, Status
from jobs.sessions import session_base_url
from tests.http_helpers import celery_queue_clear
from tests.interactive.proxy import proxy_running
from tests.lab import slurm_tool

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(420)]

SECRET = "a-proxy-secret-for-the-browser-test-0123456789"
SHOWN_WITHIN_MS = 90_000
JOB_PAGE = re.compile(r"/jobs/[0-9a-f-]{36}/$")
CELL = (
    'import os, getpass; print("gpus=" + os.environ.get("CUDA_VISIBLE_DEVICES", "none"), "user=" + getpass.getuser())'
)


@pytest.fixture
def portal_env() -> dict[str, str]:
    return {
        "LABQUEUE_POLL_SECONDS": "1",
        "LABQUEUE_SYNC_SECONDS": "1",
        "LABQUEUE_LAB_TICK_SECONDS": "3600",
        "LABQUEUE_RECONCILE_SECONDS": "3600",
        "LABQUEUE_USAGE_INGEST_SECONDS": "3600",
        "LABQUEUE_INTERACTIVE_SETUP": ". /opt/labqueue/jupyter/bin/activate",
        "LABQUEUE_INTERACTIVE_PROXY_SECRET": SECRET,
    }


@pytest.fixture
def notebook(assignment):
    assignment.interactive = True
    assignment.title = "Notebook lab"
    assignment.script_template = "echo preparing"
    assignment.parameters = []
    assignment.save()
    return assignment


def _session_cookie(user) -> str:
    login = Client()
    login.force_login(user)
    return login.cookies[django_settings.SESSION_COOKIE_NAME].value


def _status(base: str, path: str, *, cookie: str | None) -> int:
    cookies = {django_settings.SESSION_COOKIE_NAME: cookie} if cookie else {}
    return requests.get(base + path, cookies=cookies, timeout=30, allow_redirects=False).status_code


def _websocket_status(base: str, path: str, *, cookie: str, origin: str) -> int:
    """The status of a WebSocket handshake (101: accepted) sent with the student's cookie and `origin`."""
    address = urlsplit(base)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=30)
    connection.request(
        "GET",
        path,
        headers={
            "Upgrade": "websocket",
            "Connection": "Upgrade",
            "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
            "Sec-WebSocket-Version": "13",
            "Origin": origin,
            "Cookie": f"{django_settings.SESSION_COOKIE_NAME}={cookie}",
        },
    )
    status = connection.getresponse().status
    connection.close()
    return status


@pytest.fixture
def proxy(portal, tmp_path):
    """nginx with the shipped template in front of the test's portal."""
    with proxy_running(
        web_upstream=urlsplit(portal.base).netloc, secret=SECRET, directory=tmp_path / "nginx"
    ) as running:
        yield running


def test_a_student_opens_a_notebook_through_the_portal_runs_a_cell_saves_and_stops(
    portal, proxy, browser, student, classmate, ta, notebook
):
    celery_queue_clear()
    portal.start_worker()
    portal.start_beat()
    base = proxy.base_url
    cookie = _session_cookie(student)
    context = browser.new_context(base_url=base, viewport={"width": 1280, "height": 900})
    context.add_cookies([{"name": django_settings.SESSION_COOKIE_NAME, "value": cookie, "url": base}])
    page = context.new_page()
    received: list[str] = []  # every text the browser receives: bodies, WebSocket frames, addresses

    def keep_body(response) -> None:
        received.append(response.url)
        received.extend(f"{name}: {value}" for name, value in response.headers.items())
        try:
            received.append(response.body().decode(errors="replace"))
        except Exception:  # a redirect or an aborted request has no body to read
            pass

    page.on("response", keep_body)
    page.on("websocket", lambda ws: ws.on("framereceived", lambda frame: received.append(str(frame))))

    page.goto("/courses/cs101/assignments/hello/")
    page.get_by_role("button", name="Start session").click()
    page.wait_for_url(JOB_PAGE)
    job = Job.objects.get(user=student)
    open_link = page.get_by_role("link", name="Open JupyterLab")
    expect(open_link).to_be_visible(timeout=SHOWN_WITHIN_MS)
    expect(page.locator("#session-time-left")).to_contain_text("Time left:")
    session = InteractiveSession.objects.get(job=job)
    lab = session_base_url(job.uuid) + "lab"
    assert open_link.get_attribute("href") == lab

    # Nobody else gets in: a classmate, a TA of the course (staff may not open sessions here), a signed-out browser.
    assert _status(base, lab, cookie=_session_cookie(classmate)) == 404
    assert _status(base, lab, cookie=_session_cookie(ta)) == 404
    assert _status(base, lab, cookie=None) == 404
    # A WebSocket from another site's page is refused; from the portal's own, the notebook server takes it.
    events = session_base_url(job.uuid) + "api/events/subscribe"
    assert _websocket_status(base, events, cookie=cookie, origin="http://evil.example") == 404
    assert _websocket_status(base, events, cookie=cookie, origin=base) == 101

    page.goto(lab)
    page.locator('.jp-LauncherCard[data-category="Notebook"]').first.click(timeout=60_000)
    # The kernel runs on the node as the student; a cell sent before it is connected would wait unrun.
    expect(page.get_by_role("button", name=re.compile(r"\| Idle$"))).to_be_visible(timeout=60_000)
    editor = page.locator(".jp-Notebook .jp-Cell .cm-content").first
    editor.click(timeout=60_000)
    page.keyboard.insert_text(CELL)  # as pasted: the editor's auto-closed brackets and quotes stay out of it
    expect(editor).to_have_text(CELL)
    page.keyboard.press("Shift+Enter")
    output = page.locator(".jp-OutputArea-output").first
    expect(output).to_contain_text("user=student1", timeout=60_000)
    shown = output.inner_text()
    gpus = re.search(r"gpus=(\S+)", shown).group(1)
    assert gpus != "none" and re.fullmatch(r"[0-9,]+", gpus), shown  # Slurm gave the job its GPU
    page.keyboard.press("Control+s")
    rename = page.locator(".jp-Dialog")
    if rename.is_visible(timeout=5_000):  # JupyterLab asks for a name on an untitled notebook's first save
        rename.get_by_role("textbox", name="File name").fill("session.ipynb")
        rename.get_by_role("button", name="Rename").click()
    saved = page.locator(".jp-DirListing-item", has_text=re.compile(r"\.ipynb"))
    expect(saved.first).to_be_visible(timeout=30_000)

    page.goto(f"/jobs/{job.uuid}/")
    expect(page.locator("#job-live").get_by_role("link", name=re.compile(r"\.ipynb$")).first).to_be_visible(
        timeout=SHOWN_WITHIN_MS
    )
    page.get_by_role("button", name="Stop session").click()
    expect(page.locator("#session-ended")).to_be_visible(timeout=SHOWN_WITHIN_MS)
    job.refresh_from_db()
    assert job.status == Status.CANCELLED
    queue = subprocess.run([slurm_tool("squeue"), "-h", "-j", job.slurm_job_id], capture_output=True, text=True)
    assert queue.stdout.strip() == ""
    assert _status(base, lab, cookie=cookie) == 404

    assert session.token not in "\n".join(received)
    assert any("user=student1" in text for text in received)  # the capture saw the notebook's own traffic
    context.close()
