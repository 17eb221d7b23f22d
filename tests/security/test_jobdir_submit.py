"""The job-directory helper's `submit` mode, run as the student the way the worker runs it (sudo -n -u, from
the service account): it writes the portal's file list into <job root>/<netid>/<job uuid>/ and only then
becomes the sbatch the sudoers rule names, with the arguments it was given. Whatever it refuses, it refuses
before sbatch runs. No cluster: `sbatch --version` stands in for a submission (what it prints shows sbatch
ran, with the helper's arguments).
"""

import os
import subprocess
import uuid

import pytest

from tests.helper_install import JOBDIR_HELPER, jobdir_helper_install

pytestmark = pytest.mark.django_db  # for this test's own job root (tests/conftest.py)

SBATCH = "/usr/bin/sbatch"


def listing(*files: tuple[str, bytes]) -> bytes:
    """The portal's file list (jobs.workdir._pack): per file a line `<size> <name>`, then its bytes."""
    return b"".join(f"{len(data)} {name}\n".encode() + data for name, data in files)


def submit(job_root, job_uuid: str, files: bytes, *, sbatch: str = SBATCH, sudo_from: str = "labqueue"):
    """`labqueue-jobdir submit <sbatch> <job root> student1 <uuid> --version` as student1, through sudo from
    the service account (from root for a path the sudoers rule would not let the service account name)."""
    jobdir_helper_install()
    argv = ["sudo", "-n", "-u", "student1", JOBDIR_HELPER, "submit", sbatch, str(job_root), "student1", job_uuid]
    argv += ["--version"]
    if sudo_from != "root":
        argv = ["runuser", "-u", sudo_from, "--", *argv]
    return subprocess.run(argv, input=files, capture_output=True, timeout=30)


def test_submit_writes_the_files_as_the_student_then_becomes_sbatch_with_its_arguments(job_root, jobdir_helper):
    job_uuid = str(uuid.uuid4())
    done = submit(job_root, job_uuid, listing(("data.csv", b"a,b\n1,2\n"), ("empty.txt", b""), ("job.sh", b"true\n")))

    assert done.returncode == 0, done.stderr
    assert done.stdout.decode().startswith("slurm"), "sbatch ran, with the arguments after the helper's own"
    workdir = job_root / "student1" / job_uuid
    assert sorted(os.listdir(workdir)) == ["data.csv", "empty.txt", "job.sh"]
    assert (workdir / "data.csv").read_bytes() == b"a,b\n1,2\n" and (workdir / "empty.txt").read_bytes() == b""
    assert os.stat(workdir / "job.sh").st_uid == os.stat(workdir).st_uid != 0, "written as the student"


@pytest.mark.parametrize(
    ("files", "refusal"),
    [
        (b"12 job.sh\ntrue\n", "it ends inside a file"),
        (b"five job.sh\ntrue\n", "unreadable file list"),
        (b"5 job.sh", "unreadable file list"),
        (b"\xb2 job.sh\n", "unreadable file list"),
        (listing(("../escape.sh", b"x")), "cannot be used in a job directory"),
        (listing((".bashrc", b"x")), "cannot be used in a job directory"),
        (listing(("a b", b"x")), "cannot be used in a job directory"),
        (listing(("x" * 256, b"x")), "cannot be used in a job directory"),
        (listing(*[(f"f{n}", b"") for n in range(201)]), "too many files"),
    ],
    ids=["short", "size-not-a-number", "no-newline", "not-ascii", "dot-dot", "hidden", "space", "long-name", "201"],
)
def test_submit_refuses_a_bad_file_list_before_sbatch_runs(job_root, jobdir_helper, files, refusal):
    done = submit(job_root, str(uuid.uuid4()), files)

    assert done.returncode == 3, done.stderr
    assert refusal in done.stderr.decode()
    assert done.stdout == b"", "sbatch never ran"


def test_submit_writes_two_hundred_files_but_not_one_more(job_root, jobdir_helper):
    done = submit(job_root, str(uuid.uuid4()), listing(*[(f"f{n}", b"") for n in range(200)]))

    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("sbatch", ["/bin/sh", "sbatch", "/usr/bin/sbatch /tmp/sbatch", "/usr/bin/sbatch\n"], ids=repr)
def test_submit_runs_nothing_but_a_program_named_sbatch(job_root, jobdir_helper, sbatch):
    """Even where sudo lets a caller name another program (root here), the helper refuses to become it."""
    done = submit(job_root, str(uuid.uuid4()), listing(("job.sh", b"true\n")), sbatch=sbatch, sudo_from="root")

    assert done.returncode == 3 and "the helper runs sbatch only" in done.stderr.decode(), done.stderr
    assert done.stdout == b""


def test_an_sbatch_that_cannot_be_run_is_reported_as_the_workers_fault(job_root, jobdir_helper):
    done = submit(
        job_root, str(uuid.uuid4()), listing(("job.sh", b"true\n")), sbatch="/nonexistent/sbatch", sudo_from="root"
    )

    assert done.returncode == 127, "the exit status the runner reads as a deployment fault"
    assert "/nonexistent/sbatch failed to execute (No such file or directory)" in done.stderr.decode()


def test_submit_refuses_another_students_name_and_a_bad_job_identifier(job_root, jobdir_helper):
    jobdir_helper_install()
    base = ["runuser", "-u", "labqueue", "--", "sudo", "-n", "-u", "student1", JOBDIR_HELPER, "submit", SBATCH]
    other = subprocess.run(
        [*base, str(job_root), "student2", str(uuid.uuid4()), "--version"], capture_output=True, text=True, input=""
    )
    bad = subprocess.run(
        [*base, str(job_root), "student1", "not-a-uuid", "--version"], capture_output=True, text=True, input=""
    )

    assert other.returncode == 3 and "asked to prepare a job for 'student2'" in other.stderr
    assert bad.returncode == 3 and "The job's identifier is not valid." in bad.stderr
    assert other.stdout == bad.stdout == ""
