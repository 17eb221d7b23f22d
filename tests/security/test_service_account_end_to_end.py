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
import subprocess
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.utils import timezone

from jobs.models import Job, Status
from portal.celery import app
from tests.conftest import job_row, submit_form
from tests.http_helpers import celery_queue_clear
from tests.service_account import Portal, running_portal, service_media  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("service_media")]


@pytest.fixture
def portal(settings, tmp_path) -> Iterator[Portal]:
    celery_queue_clear()
    with running_portal(settings, tmp_path) as running:
        yield running


def processes_of(user: str) -> list[str]:
    listing = subprocess.run(["ps", "-u", user, "-o", "args="], capture_output=True, text=True)
    return listing.stdout.splitlines()


def test_a_job_goes_from_browser_to_cluster_to_download_with_every_portal_process_unprivileged(
    student, assignment, job_root, portal
):
    base = portal.base
    assert any("gunicorn" in line for line in processes_of("labqueue")), "the web server runs as labqueue"
    assert any("celery" in line for line in processes_of("labqueue")), "the worker runs as labqueue"
    browser = portal.browser_for(student)
    data = {key: value for key, value in submit_form().items() if key != "uploads"}
    sent = portal.submit(browser, "cs101", "hello", data, files=[("uploads", ("data.csv", b"x,y\n1,2\n", "text/csv"))])
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


def test_a_job_directory_the_portal_may_not_read_is_said_so_on_the_page_not_shown_as_empty(
    student, ta, assignment, job_root, portal
):
    job = job_row(
        student,
        assignment,
        status=Status.COMPLETED,
        workdir=str(job_root / "student1" / "0f8e1234-0000-4000-8000-000000000002"),
        submitted_at=timezone.now(),
    )
    made = subprocess.run(
        [
            "runuser",
            "-u",
            "student1",
            "--",
            "sh",
            "-c",
            f"mkdir -p {job.workdir} && echo secret > {job.workdir}/job.out && chmod 700 {job.workdir}",
        ],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr  # the student closed their folder to the portal's group

    student_page = portal.browser_for(student).get(f"{portal.base}/jobs/{job.uuid}/", timeout=30).text
    staff_page = portal.browser_for(ta).get(f"{portal.base}/jobs/{job.uuid}/", timeout=30).text

    assert "The portal cannot read this job's files" in student_page
    assert "give them back" in student_page and "(nothing yet)" not in student_page
    assert "does not let the portal's group in" in staff_page
    assert "secret" not in student_page + staff_page
