"""Odd entries a job can leave in its directory: a FIFO, a socket, a dangling symlink, a folder or file
the web server's account may not read. The job page, the downloads and the zip leave them out and keep
working; none of them hangs or fails with a server error.

The job's files are made here, no Slurm job runs. In production the web server is not root and reads
job directories through their permissions; `as_web_server` runs a request with the effective identity of
an unprivileged account (nobody), so permissions apply to it as they would there.
"""

import io
import os
import pwd
import socket
import zipfile
from pathlib import Path

import pytest
from django.urls import reverse
from django.utils import timezone

from jobs.models import Job, Status
from tests.behaviour_helpers import as_user
from tests.conftest import submit_form


def as_web_server():
    """The identity of the web server's account (nobody) for one request."""
    return as_user(pwd.getpwnam("nobody"))


@pytest.fixture
def job(client, student, assignment) -> Job:
    """A job submitted in the browser that has finished, its directory holding job.out, job.err and
    results/out.txt (as the job would have left them)."""
    client.force_login(student)
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
    job = Job.objects.get()
    workdir = Path(job.workdir)
    (workdir / "results").mkdir(parents=True)
    (workdir / "job.out").write_text("epoch 1 done\n")
    (workdir / "job.err").write_text("")
    (workdir / "results" / "out.txt").write_text("done run\n")
    for path in (workdir.parent, workdir, workdir / "results"):
        path.chmod(0o755)
    for path in (workdir / "job.out", workdir / "job.err", workdir / "results" / "out.txt"):
        path.chmod(0o644)
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(status=Status.COMPLETED, slurm_job_id="1", submitted_at=now, ended_at=now)
    job.refresh_from_db()
    return job


def page(client, job: Job) -> str:
    response = client.get(reverse("jobs:job-detail", args=[job.uuid]))
    assert response.status_code == 200
    return response.content.decode()


def download(client, job: Job, path: str):
    return client.get(reverse("jobs:job-file", args=[job.uuid, path]))


def zip_names(client, job: Job) -> list[str]:
    response = client.get(reverse("jobs:job-zip", args=[job.uuid]))
    assert response.status_code == 200
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    return sorted(name.split("/", 1)[1] for name in archive.namelist())


def test_a_fifo_the_job_left_is_not_listed_and_its_download_is_not_found_without_blocking(client, student, job):
    os.mkfifo(Path(job.workdir) / "pipe")  # nobody writes to it: reading it would wait forever
    client.force_login(student)

    assert "pipe" not in page(client, job)
    assert download(client, job, "pipe").status_code == 404
    assert zip_names(client, job) == ["job.err", "job.out", "results/out.txt"]


def test_a_socket_the_job_left_is_not_listed_and_its_download_is_not_found(client, student, job):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(Path(job.workdir) / "results" / "daemon.sock"))
        client.force_login(student)

        assert "daemon.sock" not in page(client, job)
        assert download(client, job, "results/daemon.sock").status_code == 404
        assert zip_names(client, job) == ["job.err", "job.out", "results/out.txt"]
    finally:
        server.close()


def test_a_log_replaced_by_a_dangling_symlink_shows_as_empty_and_is_not_followed(client, student, job):
    stdout = Path(job.workdir) / "job.out"
    stdout.unlink()
    stdout.symlink_to(Path(job.workdir) / "gone.out")
    client.force_login(student)

    response = client.get(reverse("jobs:job-log", args=[job.uuid, "out"]))

    assert response.status_code == 200
    text = response.content.decode()
    assert "page 1 of 1" in text and "(empty)" in text
    assert download(client, job, "job.out").status_code == 404
    assert ">job.out<" not in page(client, job)


def test_a_folder_the_web_server_may_not_open_is_left_out_and_the_rest_is_listed(client, student, job):
    secret = Path(job.workdir) / "private"
    secret.mkdir(mode=0o700)
    (secret / "weights.bin").write_bytes(b"w" * 10)
    client.force_login(student)

    with as_web_server():
        listed = page(client, job)
        names = zip_names(client, job)
        refused = download(client, job, "private/weights.bin").status_code

    assert "results/out.txt" in listed and "weights.bin" not in listed
    assert names == ["job.err", "job.out", "results/out.txt"]
    assert refused == 404


def test_entries_the_web_server_may_list_but_not_look_at_are_left_out(client, student, job):
    folder = Path(job.workdir) / "listable"
    folder.mkdir()
    (folder / "a.txt").write_text("a")
    folder.chmod(0o744)  # others may read the names, not reach the files
    client.force_login(student)

    with as_web_server():
        listed = page(client, job)
        names = zip_names(client, job)

    assert "results/out.txt" in listed and "a.txt" not in listed
    assert names == ["job.err", "job.out", "results/out.txt"]


def test_a_file_listed_but_unreadable_to_the_web_server_is_left_out_of_the_zip_and_not_served(client, student, job):
    (Path(job.workdir) / "results" / "model.pt").write_bytes(b"m" * 10)
    (Path(job.workdir) / "results" / "model.pt").chmod(0o600)
    client.force_login(student)

    with as_web_server():
        listed = page(client, job)
        names = zip_names(client, job)
        refused = download(client, job, "results/model.pt").status_code
        served = b"".join(download(client, job, "results/out.txt").streaming_content)

    assert "results/model.pt" in listed, "its size and name are visible, like `ls -l` would show"
    assert names == ["job.err", "job.out", "results/out.txt"]
    assert refused == 404 and served == b"done run\n"


def test_an_output_log_the_web_server_may_not_read_shows_as_empty_on_the_log_page(client, student, job):
    (Path(job.workdir) / "job.out").chmod(0o600)
    client.force_login(student)

    with as_web_server():
        response = client.get(reverse("jobs:job-log", args=[job.uuid, "out"]))

    assert response.status_code == 200
    assert "(empty)" in response.content.decode() and "epoch 1 done" not in response.content.decode()
