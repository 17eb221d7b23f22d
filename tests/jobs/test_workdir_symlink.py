"""The job-directory helper, run as the student, makes a job directory owned by the student and readable
by the portal's group, and refuses one that is a symbolic link.

Jobs are submitted through the view and sent with `job_dispatch` (what the Celery submit task runs). A
refusal happens in the helper before it runs sbatch (one run-as call does both): Slurm never hears of the
job. The POSIX user student1 must exist.
"""

import grp
import os
import pwd
import shutil
from pathlib import Path

import pytest
from django.urls import reverse

from courses.scripting import SCRIPT_NAME
from jobs.dispatch import job_spec
from jobs.models import Job, Status
from jobs.staging import staging_dir
from jobs.workdir import workdir_submit
from slurm.runner import command_log
from tests.behaviour_helpers import slurm_job_ids
from tests.conftest import dispatch, submitted

pytestmark = pytest.mark.slurm  # the helper runs the real sbatch, and the tests ask squeue what Slurm heard of


def assert_refused_before_sbatch(client, job: Job, commands) -> None:
    assert job.status == Status.REJECTED
    assert "symbolic link" in job.message
    assert job.slurm_job_id == "" and job.submitted_at is None
    assert len(commands) == 1 and commands[0].run_as == "student1", "one run-as call: the helper, as the student"
    assert os.path.basename(commands[0].argv[0]) == "labqueue-jobdir" and commands[0].returncode == 3, "it refused"
    assert slurm_job_ids(job.slurm_name) == set(), "the helper refused before sbatch: Slurm never heard of the job"
    assert job.events.filter(to_status=Status.REJECTED, cause__contains="symbolic link").exists()
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "symbolic link" in page


def test_a_job_directory_swapped_for_a_symlink_is_refused_and_nothing_is_written_through_it(
    client, student, assignment, tmp_path
):
    job = submitted(client, student)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    os.symlink(elsewhere, job.workdir)  # in the student's own folder, provisioned by their first job

    with command_log() as commands:
        job = dispatch(job)

    assert_refused_before_sbatch(client, job, commands)
    assert list(elsewhere.iterdir()) == [], "the script was not written into the symlink's target"
    assert os.stat(elsewhere).st_uid == 0, "the target was not handed to the student"
    assert os.path.islink(job.workdir) and os.lstat(job.workdir).st_uid == 0, "the link itself was left alone"


def test_a_job_directory_the_student_swapped_for_a_symlink_to_their_own_files_is_refused_and_nothing_is_made_through_it(
    client, student, assignment
):
    """The student cannot swap their own folder (only root writes the job root), so they swap a job's directory,
    for a link to a directory of theirs: the kernel would let the helper, as the student, write there; only the
    helper's refusal to follow a link keeps the job's files out of it."""
    job = submitted(client, student)
    account = pwd.getpwnam("student1")
    elsewhere = Path(account.pw_dir) / f"results-{job.uuid}"
    elsewhere.mkdir(mode=0o755)
    os.chown(elsewhere, account.pw_uid, account.pw_gid)
    os.symlink(elsewhere, job.workdir)
    os.lchown(job.workdir, account.pw_uid, account.pw_gid)
    try:
        with command_log() as commands:
            job = dispatch(job)

        assert_refused_before_sbatch(client, job, commands)
        assert list(elsewhere.iterdir()) == [], "nothing was made inside the symlink's target"
        assert os.readlink(job.workdir) == str(elsewhere), "the link itself was left alone"
    finally:
        shutil.rmtree(elsewhere)


def test_a_job_directory_made_for_a_submission_and_its_files_belong_to_the_student(
    client, student, assignment, job_root
):
    job = submitted(client, student, **{"data.csv": b"a,b\n1,2\n"})
    staged = [(path.name, path) for path in staging_dir(str(job.uuid)).iterdir()]
    assert [name for name, _ in staged] == ["data.csv"]

    slurm_id = workdir_submit(job_spec(job), script=job.script, files=staged)

    account, portal_group = pwd.getpwnam("student1"), grp.getgrnam("labqueue")
    workdir = Path(job.workdir)
    assert workdir == job_root / "student1" / str(job.uuid)
    assert slurm_job_ids(job.slurm_name) == {slurm_id}, "then sbatch sent it, once"
    for path in (workdir.parent, workdir, workdir / SCRIPT_NAME, workdir / "data.csv"):
        info = os.lstat(path)
        assert (info.st_uid, info.st_gid) == (account.pw_uid, portal_group.gr_gid), path
    assert (workdir / "data.csv").read_bytes() == b"a,b\n1,2\n"
    assert (workdir / SCRIPT_NAME).read_text() == job.script
    for directory in (workdir.parent, workdir):
        assert os.stat(directory).st_mode & 0o7777 == 0o2750, "the student's, readable by the portal only"
    assert os.stat(workdir / "data.csv").st_mode & 0o777 == 0o640
