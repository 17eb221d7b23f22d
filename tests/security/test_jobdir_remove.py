"""The job-directory helper's `remove` mode, run as the student the way the worker runs it (sudo -n -u, from
the service account): it deletes exactly <job root>/<netid>/<job uuid>/ and nothing a student planted can
widen that. No cluster: the helper alone, on a job root set up like production's.
"""

import os
import subprocess
import uuid
from pathlib import Path

import pytest

from tests.helper_install import JOBDIR_HELPER, jobdir_helper_install

pytestmark = pytest.mark.django_db  # for this test's own job root (tests/conftest.py)


def helper(*args: str, user: str = "student1") -> subprocess.CompletedProcess:
    """The helper run as `user` through sudo from the service account, as jobs.workdir.workdir_remove runs it
    (this checkout's: another checkout's test run may have installed its own at the shared path)."""
    jobdir_helper_install()
    argv = ["runuser", "-u", "labqueue", "--", "sudo", "-n", "-u", user, JOBDIR_HELPER, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=30)


def as_student(code: str, *args: str, user: str = "student1") -> None:
    done = subprocess.run(
        ["runuser", "-u", user, "--", "/usr/bin/python3", "-c", code, *args], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


@pytest.fixture
def job_dir(job_root, jobdir_helper) -> Path:
    """A job directory of student1 (made by student1, as the helper's `submit` does), with a few files."""
    path = job_root / "student1" / str(uuid.uuid4())
    as_student(
        "import os, sys; d = sys.argv[1]; os.makedirs(d + '/results/deep'); "
        "open(d + '/job.out', 'w').write('out'); open(d + '/results/deep/model.bin', 'w').write('12345')",
        str(path),
    )
    return path


def test_remove_deletes_the_job_directory_and_says_what_it_removed(job_root, job_dir):
    done = helper("remove", str(job_root), "student1", job_dir.name)

    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "removed files=2 directories=3 bytes=8"
    assert not job_dir.exists() and job_dir.parent.is_dir()
    again = helper("remove", str(job_root), "student1", job_dir.name)
    assert (again.returncode, again.stdout.strip()) == (0, "absent"), "already gone is not an error"


def test_remove_unlinks_planted_symlinks_and_fifos_without_following_them(job_root, job_dir):
    keep = job_root / "student1" / "keep"
    as_student(
        "import os, sys; d, keep = sys.argv[1], sys.argv[2]; os.makedirs(keep); open(keep + '/mine', 'w').write('x'); "
        "os.symlink(keep, d + '/results/to-keep'); os.symlink(keep + '/mine', d + '/mine-link'); "
        "os.mkfifo(d + '/pipe')",
        str(job_dir),
        str(keep),
    )

    done = helper("remove", str(job_root), "student1", job_dir.name)

    assert done.returncode == 0, done.stderr
    assert not job_dir.exists()
    assert (keep / "mine").read_text() == "x", "the links' target is untouched"


def test_remove_gets_through_directories_the_job_closed_to_its_owner(job_root, job_dir):
    as_student(
        "import os, sys; os.chmod(sys.argv[1] + '/results/deep', 0); os.chmod(sys.argv[1] + '/results', 0o500)",
        str(job_dir),
    )

    done = helper("remove", str(job_root), "student1", job_dir.name)

    assert done.returncode == 0, done.stderr
    assert not job_dir.exists()


def test_remove_refuses_a_symlinked_student_directory_and_leaves_its_target(job_root, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "0d9f2c4e-1111-4222-8333-944455556666").mkdir(parents=True)
    (job_root / "student1").rmdir()  # (the folder every test job root has)
    os.symlink(elsewhere, job_root / "student1")

    done = helper("remove", str(job_root), "student1", "0d9f2c4e-1111-4222-8333-944455556666")

    assert done.returncode == 3
    assert "is a symbolic link; the portal will not follow it" in done.stderr
    assert (elsewhere / "0d9f2c4e-1111-4222-8333-944455556666").is_dir()


def test_remove_refuses_another_students_directory_and_bad_arguments(job_root, job_dir):
    other = helper("remove", str(job_root), "student1", job_dir.name, user="student2")
    assert other.returncode == 3 and "runs as 'student2' but was asked to remove a job for 'student1'" in other.stderr

    for args, message in (
        ((str(job_root), "student1", "../keep"), "The job's identifier is not valid."),
        (("relative/root", "student1", job_dir.name), "The job root must be an absolute path."),
        ((f"{job_root}/student1/..", "student1", job_dir.name), "must not contain '.' or '..'"),
    ):
        done = helper("remove", *args)
        assert done.returncode == 3 and message in done.stderr, (args, done.stderr)
    assert (job_dir / "job.out").is_file()


def test_remove_refuses_a_job_directory_that_belongs_to_another_account(job_root, job_dir):
    os.chown(job_dir, 0, 0)  # as if made by someone else (root here)

    done = helper("remove", str(job_root), "student1", job_dir.name)

    assert done.returncode == 3 and "belongs to another account" in done.stderr
    assert (job_dir / "job.out").is_file()
