"""The probe behind `manage.py doctor`'s job-files check (jobs.workdir.workdir_probe), in this process.

The doctor itself runs as the service account in its own process (tests/reports/test_doctor.py); here the
same probe runs where mutation testing sees it. It goes the way a submission goes: one run-as call of the
helper's `submit`, as the student, which makes the job directory and writes the script, then runs sbatch,
asked only for its version, so nothing reaches the cluster's queue.
"""

import os
import pwd
import stat
import uuid
from pathlib import Path

import pytest

from courses.scripting import SCRIPT_NAME
from jobs.workdir import WorkdirError, WorkdirUnavailable, job_workdir, workdir_probe
from slurm import runner

pytestmark = [pytest.mark.slurm, pytest.mark.django_db]

STUDENT = "student1"  # a student's cluster account on the lab (scripts/labcluster)
SCRIPT = "# written by manage.py doctor\n"


def probe_dir() -> Path:
    return job_workdir(netid=STUDENT, job_uuid=str(uuid.uuid4()))


def test_the_probe_makes_the_job_directory_as_the_student_and_asks_sbatch_only_for_its_version(settings, job_root):
    workdir = probe_dir()

    with runner.command_log() as commands:
        workdir_probe(workdir=str(workdir), netid=STUDENT, script=SCRIPT)

    assert (workdir / SCRIPT_NAME).read_text() == SCRIPT
    student = pwd.getpwnam(STUDENT).pw_uid
    for path in (workdir.parent, workdir, workdir / SCRIPT_NAME):
        assert os.lstat(path).st_uid == student, path
    assert stat.S_IMODE(os.lstat(workdir).st_mode) == 0o2750
    [command] = commands
    assert command.run_as == STUDENT and command.returncode == 0
    helper, mode, sbatch, root, netid, name, *rest = command.argv
    assert (helper, mode, root, netid, name) == (
        settings.LABQUEUE_JOBDIR_HELPER,
        "submit",
        str(job_root),
        STUDENT,
        workdir.name,
    )
    assert os.path.basename(sbatch) == "sbatch" and rest == ["--version"]


def test_a_probe_for_an_account_the_cluster_does_not_have_is_refused_before_anything_runs(job_root):
    workdir = job_workdir(netid="lqnoaccount", job_uuid=str(uuid.uuid4()))

    with runner.command_log() as commands, pytest.raises(WorkdirError) as refused:
        workdir_probe(workdir=str(workdir), netid="lqnoaccount", script=SCRIPT)

    assert str(refused.value).startswith("The cluster has no account named 'lqnoaccount'")
    assert commands == []


def test_a_probe_the_helper_refuses_says_what_it_refused(job_root):
    """The probe's job directory in the student's folder is a symlink: the helper refuses to follow it."""
    elsewhere = job_root.parent / f"{job_root.name}-elsewhere"
    elsewhere.mkdir()
    workdir = probe_dir()
    workdir.symlink_to(elsewhere)
    try:
        with pytest.raises(WorkdirError) as refused:
            workdir_probe(workdir=str(workdir), netid=STUDENT, script=SCRIPT)
        assert str(refused.value).endswith(
            "is a symbolic link; the portal will not follow it. Remove it and try again."
        )
        assert list(elsewhere.iterdir()) == []
    finally:
        elsewhere.rmdir()


def test_a_helper_that_cannot_be_run_makes_the_probe_say_the_job_directory_could_not_be_prepared(settings, job_root):
    settings.LABQUEUE_JOBDIR_HELPER = "/nonexistent/labqueue-jobdir"

    with pytest.raises(WorkdirUnavailable) as unavailable:
        workdir_probe(workdir=str(probe_dir()), netid=STUDENT, script=SCRIPT)

    assert str(unavailable.value).startswith("the job directory could not be prepared: ")
    assert "command not found" in str(unavailable.value)


def test_a_helper_that_hangs_is_stopped_at_the_job_directory_time_limit(settings, job_root):
    hanging = job_root.parent / f"{job_root.name}-hanging-helper"
    hanging.write_text("#!/bin/sh\nsleep 5\n")
    hanging.chmod(0o755)
    settings.LABQUEUE_JOBDIR_HELPER = str(hanging)
    settings.LABQUEUE_JOBDIR_TIMEOUT = 1.0
    try:
        with runner.command_log() as commands, pytest.raises(WorkdirUnavailable) as unavailable:
            workdir_probe(workdir=str(probe_dir()), netid=STUDENT, script=SCRIPT)
    finally:
        hanging.unlink()

    assert (
        str(unavailable.value) == f"the job directory could not be prepared: {hanging.name} did not answer within 1 s"
    )
    assert [command.returncode for command in commands] == [None]
    assert commands[0].seconds < 4
