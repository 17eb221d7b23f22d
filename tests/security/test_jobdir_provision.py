"""A student's folder in the job root, <job root>/<netid>/, and the helper's own defences around it.

Only root writes the job root (root:labqueue 2751): the helper's `provision`, which only the service account
may ask for through sudo, makes each student's folder, owned by the student. So no student can make a folder
named after another (which the victim could never remove, and which would refuse all their jobs). A folder
that is not the student's (left from before, or made by hand) refuses the job, telling the student and the
worker's log what an operator must do. The helper's checks are tested one by one: a folder owned by another
student, a symbolic link planted in place of a file, a job root without the set-group-ID bit.
"""

import logging
import os
import pwd
import subprocess
import uuid
from pathlib import Path

import pytest

from jobs.models import Status
from tests.conftest import dispatch, submitted
from tests.helper_install import JOBDIR_HELPER, jobdir_helper_install
from tests.service_account import dispatch_as_service_account, service_media  # noqa: F401 (a fixture)

pytestmark = pytest.mark.django_db  # for this test's own job root (tests/conftest.py)


def helper(*args: str, user: str = "student1", stdin: bytes = b"") -> subprocess.CompletedProcess:
    """The helper run as `user` through sudo from the service account, as the worker runs it."""
    jobdir_helper_install()
    argv = ["runuser", "-u", "labqueue", "--", "sudo", "-n", "-u", user, JOBDIR_HELPER, *args]
    return subprocess.run(argv, input=stdin, capture_output=True, timeout=30)


def as_user(user: str, code: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", user, "--", "/usr/bin/python3", "-c", code, *args], capture_output=True)


def squat(folder: Path, owner: str = "student2") -> None:
    """`folder` as another student would have made it before the job root was closed: theirs, open to all."""
    os.chown(folder, pwd.getpwnam(owner).pw_uid, -1)
    os.chmod(folder, 0o777)


def test_a_student_cannot_make_another_students_folder_in_the_job_root(job_root):
    (job_root / "student2").rmdir()  # student2 has not submitted yet

    made = as_user("student1", "import os, sys; os.mkdir(sys.argv[1])", str(job_root / "student2"))

    assert made.returncode != 0 and b"Permission denied" in made.stderr
    assert not (job_root / "student2").exists()


@pytest.mark.slurm
@pytest.mark.django_db(transaction=True)  # the service account's worker sees committed rows only
@pytest.mark.usefixtures("service_media")
def test_the_worker_provisions_a_students_folder_before_their_first_job(client, student, assignment, settings):
    job = submitted(client, student)
    folder = Path(job.workdir).parent
    folder.rmdir()

    dispatch_as_service_account(job.pk, settings)

    job.refresh_from_db()
    assert job.status in (Status.PENDING, Status.RUNNING, Status.COMPLETED), (job.status, job.message)
    info = folder.stat()
    assert info.st_uid == pwd.getpwnam("student1").pw_uid and oct(info.st_mode & 0o7777) == oct(0o2750)


@pytest.mark.slurm
def test_a_folder_another_student_made_refuses_the_job_and_says_what_an_operator_must_do(
    client, student, assignment, caplog
):
    job = submitted(client, student)
    folder = Path(job.workdir).parent
    squat(folder)

    with caplog.at_level(logging.ERROR, logger="jobs.workdir"):
        job = dispatch(job)

    assert job.status == Status.REJECTED
    assert "is not yours" in job.message and "You cannot fix this yourself" in job.message
    assert f"labqueue-jobdir provision {folder.parent} student1" in job.message
    assert any(f"mv {folder} {folder}.old" in record.getMessage() for record in caplog.records), caplog.text
    assert list(folder.iterdir()) == [], "nothing was written into the other student's folder"


def test_provision_makes_the_folder_owned_by_the_student_and_leaves_an_existing_one(job_root):
    (job_root / "student3").rmdir()

    made = helper("provision", str(job_root), "student3", user="root")
    again = helper("provision", str(job_root), "student3", user="root")

    assert made.returncode == 0 and made.stdout == b"provisioned\n", made.stderr
    assert again.returncode == 0 and again.stdout == b"exists\n", again.stderr
    info = (job_root / "student3").stat()
    assert info.st_uid == pwd.getpwnam("student3").pw_uid and oct(info.st_mode & 0o7777) == oct(0o2750)


def test_provision_refuses_a_folder_owned_by_another_student_and_leaves_it_theirs(job_root):
    squat(job_root / "student1")

    done = helper("provision", str(job_root), "student1", user="root")

    assert done.returncode == 3, done.stdout
    assert "belongs to another account; research computing must move it out of the way" in done.stderr.decode()
    assert (job_root / "student1").stat().st_uid == pwd.getpwnam("student2").pw_uid


@pytest.mark.parametrize("netid", ["root", "labqueue", "nosuchuser", "../etc"])
def test_provision_refuses_root_system_accounts_and_bad_names(job_root, netid):
    done = helper("provision", str(job_root), netid, user="root")

    assert done.returncode == 3, done.stdout
    assert not (job_root / netid).exists() or netid == "../etc"


def test_provision_refuses_a_directory_that_is_not_a_job_root(tmp_path):
    """The service account may not have root make a student's folder anywhere else (a root-owned folder
    without the job root's group, bit and mode)."""
    elsewhere = Path("/var/lib/labqueue/test-jobs") / f"not-a-root-{uuid.uuid4().hex[:8]}"
    elsewhere.mkdir(mode=0o755)
    os.chmod(elsewhere, 0o2755)
    try:
        done = helper("provision", str(elsewhere), "student1", user="root")
        assert done.returncode == 3 and "is not set up for the portal" in done.stderr.decode()
        assert not (elsewhere / "student1").exists()
    finally:
        elsewhere.rmdir()


def test_submit_refuses_a_folder_owned_by_another_student_even_one_open_to_all(job_root):
    squat(job_root / "student1")
    job_uuid = str(uuid.uuid4())

    done = helper(
        "submit", "/usr/bin/sbatch", str(job_root), "student1", job_uuid, "--version", stdin=b"5 job.sh\ntrue\n"
    )

    assert done.returncode == 3 and done.stdout == b"", "sbatch never ran"
    assert "belongs to another account; research computing must move it out of the way" in done.stderr.decode()
    assert not (job_root / "student1" / job_uuid).exists(), "nothing written into the other student's folder"


def test_remove_refuses_a_folder_owned_by_another_student(job_root):
    squat(job_root / "student1")
    job_dir = job_root / "student1" / str(uuid.uuid4())
    assert as_user("student2", "import os, sys; os.mkdir(sys.argv[1])", str(job_dir)).returncode == 0

    done = helper("remove", str(job_root), "student1", job_dir.name)

    assert done.returncode == 3 and "belongs to another account" in done.stderr.decode()
    assert job_dir.is_dir()


def test_submit_refuses_a_symlink_planted_in_place_of_a_file_and_leaves_its_target(job_root):
    """The target is the student's own file (the kernel would let the helper write it): only O_NOFOLLOW
    keeps the job's script from overwriting it."""
    job_uuid = str(uuid.uuid4())
    target = Path(pwd.getpwnam("student1").pw_dir) / f"thesis-{job_uuid}.txt"
    plant = (
        "import os, sys; d, t = sys.argv[1], sys.argv[2]; os.mkdir(d); open(t, 'w').write('my thesis'); "
        "os.symlink(t, d + '/job.sh')"
    )
    assert as_user("student1", plant, str(job_root / "student1" / job_uuid), str(target)).returncode == 0
    try:
        done = helper(
            "submit", "/usr/bin/sbatch", str(job_root), "student1", job_uuid, "--version", stdin=b"5 job.sh\ntrue\n"
        )

        assert done.returncode == 3 and done.stdout == b"", done.stderr
        assert "'job.sh' in the job directory is a symbolic link" in done.stderr.decode()
        assert target.read_text() == "my thesis"
    finally:
        target.unlink()


@pytest.mark.parametrize("mode", [0o1751, 0o0751], ids=["sticky-bit-only", "no-bits"])
def test_a_job_root_without_the_set_group_id_bit_is_refused(job_root, mode):
    os.chmod(job_root, mode)
    job_uuid = str(uuid.uuid4())

    submitting = helper(
        "submit", "/usr/bin/sbatch", str(job_root), "student1", job_uuid, "--version", stdin=b"5 job.sh\ntrue\n"
    )
    (job_root / "student4").rmdir()
    provisioning = helper("provision", str(job_root), "student4", user="root")

    for done in (submitting, provisioning):
        assert done.returncode == 3 and "lacks the set-group-ID bit" in done.stderr.decode(), done.stderr
    assert not (job_root / "student1" / job_uuid).exists() and not (job_root / "student4").exists()
