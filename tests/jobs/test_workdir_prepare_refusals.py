"""Preparing a job's directory: refusals that end the job before Slurm is asked (the worker running as
the service account is in tests/security/test_worker_attacks.py).

SLURM_BIN_DIR points at an empty folder, so even a wrong behaviour cannot submit anything to the lab
cluster; the tests check that no Slurm command was tried at all.
"""

import html
import os
import pwd
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse

from courses.models import Role, StarterFile
from jobs.dispatch import job_dispatch
from jobs.models import Job, Status
from jobs.staging import staging_dir
from slurm import runner
from tests.conftest import make_user, submitted


@pytest.fixture
def no_slurm_tools(settings, tmp_path: Path) -> Path:
    folder = tmp_path / "no-slurm"
    folder.mkdir()
    settings.SLURM_BIN_DIR = str(folder)
    return folder


def test_a_student_without_an_account_on_the_cluster_gets_a_refused_job_saying_so(
    client, course, assignment, no_slurm_tools
):
    newcomer = make_user("newcomer", "lqnoaccount")
    course.enrollments.create(user=newcomer, role=Role.STUDENT)
    with pytest.raises(KeyError):
        pwd.getpwnam("lqnoaccount")
    job = submitted(client, newcomer)

    with runner.command_log() as commands:
        job_dispatch(job_id=job.pk)

    assert commands == []
    job.refresh_from_db()
    assert job.status == Status.REJECTED and job.ended_at is not None
    message = (
        "The cluster has no account named 'lqnoaccount', so the job cannot run as you. "
        "Ask the course staff or research computing to create your cluster account."
    )
    assert job.message == message
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert html.escape(message) in page


@pytest.mark.parametrize("name", ["job.sh", ".bashrc"])
def test_a_starter_file_with_a_name_the_job_directory_cannot_take_refuses_the_job(
    client, student, assignment, name, no_slurm_tools
):
    StarterFile.objects.create(assignment=assignment, name=name, file=ContentFile(b"echo planted\n", name="starter"))
    job = submitted(client, student)

    with runner.command_log() as commands:
        job_dispatch(job_id=job.pk)

    assert commands == []
    job.refresh_from_db()
    assert job.status == Status.REJECTED
    assert job.message == f"The file name '{name}' cannot be used in a job directory; rename the file."
    assert not (Path(job.workdir) / "job.sh").exists(), "the script is written only after every file was accepted"


def submitted_with_upload(client, user) -> tuple[Job, Path]:
    """A job submitted with one uploaded file; the file as the web server staged it for the worker."""
    job = submitted(client, user, **{"data.csv": b"a,b\n1,2\n"})
    staged = staging_dir(str(job.uuid)) / "data.csv"
    assert staged.read_bytes() == b"a,b\n1,2\n"
    return job, staged


def test_a_staged_upload_replaced_by_a_symlink_is_refused_and_nothing_is_read_through_it(
    client, student, assignment, no_slurm_tools, tmp_path
):
    secret = tmp_path / "secret"
    secret.write_text("not for the student\n")
    job, staged = submitted_with_upload(client, student)
    staged.unlink()
    staged.symlink_to(secret)

    with runner.command_log() as commands:
        job_dispatch(job_id=job.pk)

    assert commands == []
    job.refresh_from_db()
    assert job.status == Status.REJECTED
    assert job.message == "The file 'data.csv' could not be read (Too many levels of symbolic links); upload it again."
    assert not Path(job.workdir).exists()


def test_a_staged_upload_replaced_by_a_fifo_is_refused_at_once_instead_of_waiting_for_a_writer(
    client, student, assignment, no_slurm_tools
):
    job, staged = submitted_with_upload(client, student)
    staged.unlink()
    os.mkfifo(staged)

    with runner.command_log() as commands:
        job_dispatch(job_id=job.pk)  # without O_NONBLOCK this open would wait for a writer forever

    assert commands == []
    job.refresh_from_db()
    assert job.status == Status.REJECTED
    assert job.message == "'data.csv' is not a regular file; upload it again."
