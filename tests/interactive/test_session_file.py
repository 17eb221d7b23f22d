"""What the worker believes of a session's file (jobs.sessions.sessions_follow): the job writes it, so the student
controls it. The worker records an address only when the file holds an IP address, a port above 1023 and a token
of the launcher's alphabet, and a notebook server answers there under the job's own base URL with that token.
No cluster: a job row as running, its folder as the student's, and a small HTTP server standing for a notebook."""

import json
import os
import pwd
import threading
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.utils import timezone

from jobs.models import InteractiveSession, Job, JobEvent, Status
from jobs.sessions import session_base_url, sessions_follow
from tests.conftest import job_row

TOKEN = "t" * 43


class _Notebook(BaseHTTPRequestHandler):
    """Answers /interactive/<uuid>/api/status with the token, as jupyter_server does."""

    base = ""
    last_activity = "2026-01-01T00:00:00Z"

    def do_GET(self):  # noqa: N802 (http.server's name)
        if self.path != f"{self.base}api/status" or self.headers.get("Authorization") != f"token {TOKEN}":
            self.send_response(403)
            self.end_headers()
            return
        body = json.dumps({"last_activity": self.last_activity, "kernels": 0}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def notebook_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Notebook)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()


@pytest.fixture
def session_job(student, assignment, job_root):
    assignment.interactive = True
    assignment.save()
    job = job_row(student, assignment, status=Status.RUNNING, started_at=timezone.now())
    folder = job_root / student.netid / str(job.uuid)
    folder.mkdir()
    uid = pwd.getpwnam(student.netid).pw_uid
    os.chown(folder, uid, -1)
    Job.objects.filter(pk=job.pk).update(workdir=str(folder))
    job.refresh_from_db()
    InteractiveSession.objects.create(job=job)
    return job


def _write(job: Job, content: str) -> None:
    path = os.path.join(job.workdir, ".labqueue-session.json")
    with open(path, "w") as handle:
        handle.write(content)
    os.chown(path, pwd.getpwnam(job.run_as).pw_uid, -1)
    os.chmod(path, 0o640)


def _ready(job: Job) -> bool:
    return InteractiveSession.objects.get(job=job).ready_at is not None


@pytest.mark.parametrize(
    "endpoint",
    [
        "not json",
        json.dumps({"host": "gpu1", "port": "{port}", "token": TOKEN}),  # a name, not an address
        json.dumps({"host": "127.0.0.1", "port": "not a number", "token": TOKEN}),
        json.dumps({"host": "127.0.0.1", "port": 80, "token": TOKEN}),  # a system port
        json.dumps({"host": "127.0.0.1", "port": 70000, "token": TOKEN}),
        json.dumps({"host": "127.0.0.1", "port": "{port}", "token": "short"}),
        json.dumps({"host": "127.0.0.1", "port": "{port}", "token": "x" * 40 + "\r\nX-Injected: 1"}),
        json.dumps({"host": "127.0.0.1", "port": "{port}"}),
    ],
)
def test_a_file_the_launcher_would_not_write_opens_nothing(session_job, notebook_server, endpoint):
    _Notebook.base = session_base_url(session_job.uuid)
    _write(session_job, endpoint.replace('"{port}"', str(notebook_server.server_port)))
    sessions_follow()
    assert not _ready(session_job)


def test_a_server_that_does_not_answer_under_the_jobs_base_url_opens_nothing(session_job, notebook_server):
    _Notebook.base = "/interactive/another-job/"
    _write(session_job, json.dumps({"host": "127.0.0.1", "port": notebook_server.server_port, "token": TOKEN}))
    sessions_follow()
    assert not _ready(session_job)


def test_a_notebook_server_answering_with_the_token_opens_the_session_and_idleness_stops_it(
    session_job, notebook_server, settings, django_capture_on_commit_callbacks
):
    _Notebook.base = session_base_url(session_job.uuid)
    _Notebook.last_activity = timezone.now().isoformat()
    _write(session_job, json.dumps({"host": "127.0.0.1", "port": notebook_server.server_port, "token": TOKEN}))
    sessions_follow()
    session = InteractiveSession.objects.get(job=session_job)
    assert (session.host, session.port, session.token) == ("127.0.0.1", notebook_server.server_port, TOKEN)
    # A server whose activity cannot be read keeps the last one known: 20 minutes later it is idle.
    settings.LABQUEUE_INTERACTIVE_IDLE_MINUTES = 10
    _Notebook.last_activity = "not a time"
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        sessions_follow(now=timezone.now() + timedelta(minutes=20))
    session_job.refresh_from_db()
    assert session_job.cancel_requested and len(callbacks) == 1  # one scancel, after the commit
    assert JobEvent.objects.filter(job=session_job, cause__contains="no activity for 10 minutes").count() == 1
    # Asked again before the scancel ends the job: nothing more is sent.
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        sessions_follow(now=timezone.now() + timedelta(minutes=22))
    assert callbacks == []
