"""Interactive sessions on the lab cluster: a student's JupyterLab job, what the worker learns of it, and who the
proxy's auth check admits (jobs.sessions, jobs.session_views). The browser through nginx is
tests/browser/test_notebook_session.py."""

import json
import re
import subprocess
import time
import urllib.request
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from jobs.dispatch import job_scancel
from jobs.models import InteractiveSession, Job, JobEvent, Status
from jobs.sessions import session_base_url, sessions_follow
from tests.conftest import dispatch, submitted, wait_for_status
from tests.interactive.conftest import SECRET
from tests.lab import slurm_tool
from tests.ops.metrics_helpers import TOKEN, scrape

pytestmark = pytest.mark.slurm


def _auth(client, job, *, secret=SECRET, origin=None, path="lab"):
    headers = {"HTTP_X_ORIGINAL_URI": f"{session_base_url(job.uuid)}{path}"}
    if secret is not None:
        headers["HTTP_X_LABQUEUE_PROXY_SECRET"] = secret
    if origin is not None:
        headers["HTTP_ORIGIN"] = origin
    return client.get(reverse("jobs:session-auth"), **headers)


def _open_session(job, timeout: float = 90):
    """Follow the sessions (as beat does) until the job's notebook server answered the worker."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sessions_follow()
        session = InteractiveSession.objects.get(job=job)
        if session.ready_at is not None:
            return session
        job.refresh_from_db()
        assert job.status == Status.RUNNING, f"the session's job ended: {job.status} {job.message}"
        time.sleep(1)
    found = subprocess.run(["ls", "-la", job.workdir], capture_output=True, text=True).stdout
    errors = subprocess.run(["tail", "-5", f"{job.workdir}/job.err"], capture_output=True, text=True).stdout
    raise AssertionError(f"the notebook server never answered:\n{found}\n{errors}")


@pytest.fixture
def running_session(client, student, notebook):
    job = wait_for_status(dispatch(submitted(client, student)), Status.RUNNING)
    return job, _open_session(job)


def test_a_session_opens_for_its_owner_only_and_closes_when_the_job_ends(
    client, running_session, classmate, ta, instructor, course, settings
):
    job, session = running_session
    # The job runs as the student, and the server it started answers at the job's own base URL.
    assert session.host and session.port and re.fullmatch(r"[A-Za-z0-9_-]{16,128}", session.token)
    client.force_login(job.user)
    answer = _auth(client, job)
    assert answer.status_code == 200
    assert answer["X-LabQueue-Upstream"] == f"{session.host}:{session.port}"
    assert answer["X-LabQueue-Token"] == session.token
    settings.LABQUEUE_METRICS_TOKEN = TOKEN
    assert scrape(client)[("labqueue_interactive_sessions_open", ())] == 1
    assert f"connect-src http://testserver{session_base_url(job.uuid)}" in answer["X-LabQueue-CSP"]
    # The job page offers Open, with the time left, and never the token.
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert f'href="{session_base_url(job.uuid)}lab"' in page and "Time left:" in page
    assert session.token not in page
    # Nor does any file of the job: the session file is listed as not offered, and cannot be fetched.
    assert client.get(reverse("jobs:job-file", args=[job.uuid, ".labqueue-session.json"])).status_code == 404
    assert client.get(reverse("jobs:job-file-view", args=[job.uuid, ".labqueue-session.json"])).status_code == 404
    # Not from another site's page (a forged WebSocket carries its Origin), nor without the proxy's secret.
    assert _auth(client, job, origin="http://evil.example").status_code == 403
    assert _auth(client, job, secret=None).status_code == 403
    assert _auth(client, job, secret="guess").status_code == 403
    # Not for a classmate, course staff while the course does not allow it, or someone not signed in.
    for other in (classmate, ta, instructor):
        client.force_login(other)
        assert _auth(client, job).status_code == 403
        assert "Open JupyterLab" not in client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    client.logout()
    assert _auth(client, job).status_code == 403
    # Staff where the course allows it: admitted, and the opening is in the job's history.
    course.staff_may_open_sessions = True
    course.save()
    client.force_login(ta)
    assert _auth(client, job).status_code == 200
    assert _auth(client, job).status_code == 200
    assert JobEvent.objects.filter(job=job, actor=ta, cause__contains="opened by").count() == 1
    # Stop: scancel as the student; once the sync sees the job end, the proxy is refused.
    client.force_login(job.user)
    assert client.post(reverse("jobs:job-cancel", args=[job.uuid])).status_code == 302
    job_scancel(job_id=job.pk)
    wait_for_status(job, Status.CANCELLED)
    assert _auth(client, job).status_code == 403
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "This session has ended." in page
    assert scrape(client)[("labqueue_interactive_sessions_open", ())] == 0


def test_the_notebook_runs_as_the_student_in_the_job_folder_and_saves_there(client, running_session):
    """What the browser does through the proxy, done here with the upstream and token the auth check gives
    nginx: a notebook saved through Jupyter's API lands in the job's files as the student's file."""
    job, session = running_session
    base = f"http://{session.host}:{session.port}{session_base_url(job.uuid)}"
    notebook = {"type": "notebook", "content": {"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}}
    request = urllib.request.Request(
        f"{base}api/contents/saved.ipynb",
        data=json.dumps(notebook).encode(),
        method="PUT",
        headers={"Authorization": f"token {session.token}", "Content-Type": "application/json"},
    )
    with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=10) as answer:
        assert answer.status in (200, 201)
    client.force_login(job.user)
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "saved.ipynb" in page
    assert client.get(reverse("jobs:job-file", args=[job.uuid, "saved.ipynb"])).status_code == 200


def test_five_minutes_before_its_time_limit_the_page_tells_the_student_to_save(client, running_session):
    job, _session = running_session
    client.force_login(job.user)
    # As the page would show a 15-minute session 3 minutes in, then 11 minutes in.
    Job.objects.filter(pk=job.pk).update(minutes=15, started_at=timezone.now() - timedelta(minutes=3))
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "Time left: 12 minutes." in page and "Your session ends in" not in page
    Job.objects.filter(pk=job.pk).update(started_at=timezone.now() - timedelta(minutes=11))
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "Your session ends in 4 minutes. Save your notebook now" in page


def test_an_idle_session_is_stopped_and_the_page_says_why(client, running_session, settings):
    job, session = running_session
    settings.LABQUEUE_INTERACTIVE_IDLE_MINUTES = 2
    sessions_follow(now=timezone.now() + timedelta(minutes=1, seconds=5))  # asked, active a minute ago: kept
    job.refresh_from_db()
    assert not job.cancel_requested
    sessions_follow(now=timezone.now() + timedelta(minutes=3))  # the server's last activity is 3 minutes old
    job.refresh_from_db()
    assert job.cancel_requested
    assert JobEvent.objects.filter(job=job, cause__contains="no activity for 2 minutes").exists()
    job_scancel(job_id=job.pk)
    wait_for_status(job, Status.CANCELLED)
    client.force_login(job.user)
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "stopped it because the notebook had no activity" in page


def test_a_node_without_jupyter_fails_the_session_with_an_explanation_naming_the_setting(
    client, student, notebook, settings
):
    settings.LABQUEUE_INTERACTIVE_SETUP = ""
    job = wait_for_status(dispatch(submitted(client, student)), Status.FAILED)
    assert job.explanation_key == "no-jupyter"
    client.force_login(student)
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "JupyterLab is not available" in page and "LABQUEUE_INTERACTIVE_SETUP" in page


def test_the_sync_finds_no_server_where_the_file_points_elsewhere(client, student, notebook):
    """A student who rewrites the session file to point at another service makes the proxy point at nothing:
    the worker records an address only when a notebook server answers under the job's base URL with the token."""
    job = wait_for_status(dispatch(submitted(client, student)), Status.RUNNING)
    session = _open_session(job)
    # What the job itself could write: the portal's own web port, a port nobody listens on.
    InteractiveSession.objects.filter(pk=session.pk).update(ready_at=None, host="", port=None, token="")
    folder = job.workdir
    forged = json.dumps({"host": "127.0.0.1", "port": 6379, "token": "a" * 32})
    subprocess.run(
        [
            "sudo",
            "-n",
            "-u",
            job.run_as,
            "sh",
            "-c",
            f"umask 027; printf '%s' '{forged}' > {folder}/.labqueue-session.json",
        ],
        check=True,
    )
    sessions_follow()
    assert InteractiveSession.objects.get(pk=session.pk).ready_at is None
    subprocess.run([slurm_tool("scancel"), job.slurm_job_id], check=False)
