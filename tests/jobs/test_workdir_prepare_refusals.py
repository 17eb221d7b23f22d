"""Preparing a job's directory: refusals that end the job before Slurm is asked, and a worker that does
not run as root.

SLURM_BIN_DIR points at an empty folder, so even a wrong behaviour cannot submit anything to the lab
cluster; the tests check that no Slurm command was tried at all.
"""

import os
import pwd
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.urls import reverse

from courses.models import Role, StarterFile
from jobs.dispatch import job_dispatch
from jobs.models import Job, Status
from jobs.workdir import WorkdirError, workdir_prepare
from slurm import runner
from tests.behaviour_helpers import as_user
from tests.conftest import JOB_ROOT_BASE, make_user, submit_form


@pytest.fixture
def no_slurm_tools(settings, tmp_path: Path) -> Path:
    folder = tmp_path / "no-slurm"
    folder.mkdir()
    settings.SLURM_BIN_DIR = str(folder)
    return folder


def submit(client, user) -> Job:
    client.force_login(user)
    assert client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form()).status_code == 302
    return Job.objects.get(user=user)


def test_a_student_without_an_account_on_the_cluster_gets_a_refused_job_saying_so(
    client, course, assignment, no_slurm_tools
):
    newcomer = make_user("newcomer", "lqnoaccount")
    course.enrollments.create(user=newcomer, role=Role.STUDENT)
    with pytest.raises(KeyError):
        pwd.getpwnam("lqnoaccount")
    job = submit(client, newcomer)

    with runner.command_log() as commands:
        job_dispatch(job_id=job.pk)

    assert commands == []
    job.refresh_from_db()
    assert job.status == Status.REJECTED and job.ended_at is not None
    assert job.message.startswith("The cluster has no account named 'lqnoaccount', so the job cannot run as you.")
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "Ask the course staff or research computing to create your cluster account." in page


@pytest.mark.parametrize("name", ["job.sh", ".bashrc"])
def test_a_starter_file_with_a_name_the_job_directory_cannot_take_refuses_the_job(
    client, student, assignment, name, no_slurm_tools
):
    StarterFile.objects.create(assignment=assignment, name=name, file=ContentFile(b"echo planted\n", name="starter"))
    job = submit(client, student)

    with runner.command_log() as commands:
        job_dispatch(job_id=job.pk)

    assert commands == []
    job.refresh_from_db()
    assert job.status == Status.REJECTED
    assert job.message == f"The file name '{name}' cannot be used in a job directory; rename the file."
    assert not (Path(job.workdir) / "job.sh").exists(), "the script is written only after every file was accepted"


@pytest.fixture
def worker_owned_root() -> Iterator[Path]:
    """A job root the unprivileged worker owns (pytest's tmp_path is private to root)."""
    JOB_ROOT_BASE.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(dir=JOB_ROOT_BASE))
    root.chmod(0o755)
    worker = pwd.getpwnam("nobody")
    os.chown(root, worker.pw_uid, worker.pw_gid)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_worker_not_running_as_root_prepares_the_directory_as_itself_without_changing_owners(
    worker_owned_root: Path,
):
    worker = pwd.getpwnam("nobody")
    own_root = worker_owned_root
    source = own_root / "data.csv"
    source.write_text("a,b\n1,2\n")
    source.chmod(0o644)
    workdir = own_root / "student1" / "0f8e"

    with as_user(worker):
        script = workdir_prepare(
            workdir=str(workdir), netid="student1", script="echo hi\n", files=[("data.csv", source)]
        )

    assert script == str(workdir / "job.sh")
    assert Path(script).read_text() == "echo hi\n" and (workdir / "data.csv").read_text() == "a,b\n1,2\n"
    for path in (workdir.parent, workdir, workdir / "job.sh", workdir / "data.csv"):
        assert path.stat().st_uid == worker.pw_uid, f"{path} keeps the worker as its owner"


def test_a_worker_that_may_not_write_under_the_job_root_gets_a_message_for_the_student(worker_owned_root: Path):
    root_owned = worker_owned_root / "root-owned"
    root_owned.mkdir(mode=0o755)  # owned by root: the unprivileged worker may not create folders in it

    with as_user(pwd.getpwnam("nobody")), pytest.raises(WorkdirError) as caught:
        workdir_prepare(workdir=str(root_owned / "student1" / "0f8e"), netid="student1", script="echo hi\n", files=[])

    assert str(caught.value) == "The portal could not prepare the job directory (Permission denied)."
