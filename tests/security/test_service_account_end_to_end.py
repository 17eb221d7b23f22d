"""The whole path with nothing of the portal running as root: the web server (gunicorn) and the Celery
worker run as the service account `labqueue` with the production run-as prefix `sudo -n -u {user}` and
the sudoers rule of deploy/sudoers.labqueue. A student submits over HTTP with an upload; the worker has
the helper prepare the directory and runs sbatch as the student; the job runs on the lab cluster; the
web server, reading through the job root's group, serves the result file and the zip.
"""

import grp
import io
import os
import pwd
import re
import signal
import socket
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from django.conf import settings as django_settings
from django.test import Client

from jobs.models import Job, Status
from portal.celery import app
from tests.conftest import submit_form
from tests.http_helpers import celery_queue_clear
from tests.service_account import REPO, service_argv, service_env, service_media  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("service_media")]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen:
    handle = open(log, "wb")
    return subprocess.Popen(argv, env=env, cwd=REPO, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)


def stop(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(process.pid, signal.SIGKILL)


@pytest.fixture
def portal_as_service_account(settings, tmp_path) -> Iterator[str]:
    """gunicorn and a Celery worker as `labqueue`, on this test's database, broker and job root."""
    celery_queue_clear()
    port = free_port()
    env = service_env(settings)
    bin_dir = Path(sys.executable).parent
    web = start(
        service_argv(
            str(bin_dir / "gunicorn"), "portal.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "2"
        ),
        env,
        tmp_path / "web.log",
    )
    worker = start(
        service_argv(
            str(bin_dir / "celery"),
            "-A",
            "portal",
            "worker",
            "--concurrency=1",
            "--without-mingle",
            "--without-gossip",
            "--loglevel=INFO",
            "--hostname=e2e@%h",
        ),
        env,
        tmp_path / "worker.log",
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(base + "/", timeout=10)
                break
            except requests.RequestException:
                assert time.monotonic() < deadline, (tmp_path / "web.log").read_text()
                time.sleep(0.2)
        yield base
    finally:
        stop(web)
        stop(worker)
        print((tmp_path / "web.log").read_text()[-3000:], (tmp_path / "worker.log").read_text()[-5000:])


def processes_of(user: str) -> list[str]:
    listing = subprocess.run(["ps", "-u", user, "-o", "args="], capture_output=True, text=True)
    return listing.stdout.splitlines()


def test_a_job_goes_from_browser_to_cluster_to_download_with_every_portal_process_unprivileged(
    student, assignment, job_root, portal_as_service_account
):
    base = portal_as_service_account
    assert any("gunicorn" in line for line in processes_of("labqueue")), "the web server runs as labqueue"
    assert any("celery" in line for line in processes_of("labqueue")), "the worker runs as labqueue"
    browser = requests.Session()
    login = Client()
    login.force_login(student)  # a signed-in session, stored in the database the web server reads
    browser.cookies.set(django_settings.SESSION_COOKIE_NAME, login.cookies[django_settings.SESSION_COOKIE_NAME].value)

    form_page = browser.get(f"{base}/courses/cs101/assignments/hello/", timeout=30)
    assert form_page.status_code == 200, form_page.text[:2000]
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form_page.text).group(1)
    data = {key: value for key, value in submit_form().items() if key != "uploads"}
    sent = browser.post(
        f"{base}/jobs/submit/cs101/hello/",
        data={**data, "csrfmiddlewaretoken": token},
        files=[("uploads", ("data.csv", b"x,y\n1,2\n", "text/csv"))],
        headers={"Referer": form_page.url},
        timeout=30,
        allow_redirects=False,
    )
    assert sent.status_code == 302, sent.text[:2000]
    job = Job.objects.get(user=student)

    deadline = time.monotonic() + 150
    while job.status not in (Status.COMPLETED, Status.FAILED, Status.REJECTED, Status.CANCELLED):
        assert time.monotonic() < deadline, f"job still {job.status}: {job.message}"
        if job.status in (Status.PENDING, Status.RUNNING):
            app.send_task("jobs.tasks.jobs_sync")  # what beat sends; the labqueue worker runs it
        time.sleep(1)
        job.refresh_from_db()
    assert job.status == Status.COMPLETED, job.message

    student_uid, portal_gid = pwd.getpwnam("student1").pw_uid, grp.getgrnam("labqueue").gr_gid
    workdir = Path(job.workdir)
    for path in (
        workdir,
        workdir / "job.sh",
        workdir / "data.csv",
        workdir / "job.out",
        workdir / "results" / "out.txt",
    ):
        info = os.stat(path)
        assert (info.st_uid, info.st_gid) == (student_uid, portal_gid), path
    result = browser.get(f"{base}/jobs/{job.uuid}/files/results/out.txt", timeout=30)
    assert result.status_code == 200 and result.content == b"done run\n"
    output = browser.get(f"{base}/jobs/{job.uuid}/", timeout=30).text
    assert "user=student1" in output, "sbatch ran as the student"
    archive = browser.get(f"{base}/jobs/{job.uuid}/download.zip", timeout=30)
    assert archive.status_code == 200
    names = zipfile.ZipFile(io.BytesIO(archive.content)).namelist()
    assert any(name.endswith("/results/out.txt") for name in names) and any(
        name.endswith("/data.csv") for name in names
    )
