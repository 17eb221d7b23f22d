"""Attacks on the worker through a student's own job directory, performed for real.

The student owns LABQUEUE_JOB_ROOT/<netid>/, so a process of theirs (their own running job) can plant
FIFOs and symlinks there and swap directories while the worker prepares a job. The worker runs here as
the unprivileged service account (`labqueue`, a real process) and writes only through the job-directory
helper run as the student (`sudo -n -u student1`), so none of it may change a file outside the
student's tree, block a worker, or lose the job without a clear message.
"""

import os
import pwd
import shutil
import signal
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from jobs.models import Job, Status
from tests.conftest import JOB_ROOT_BASE, submit_form
from tests.service_account import dispatch_as_service_account, service_media  # noqa: F401 (a fixture)

pytestmark = [pytest.mark.slurm, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("service_media")]

#: Runs as the student: makes their job directory early, plants a FIFO named like the job's second
#: upload, and when the worker opens it swaps the directory for a symlink to the victim.
FIFO_AND_SWAP = r"""
import os, sys
jobdir, victim = sys.argv[1], sys.argv[2]
os.makedirs(jobdir)
os.mkfifo(os.path.join(jobdir, "b.csv"))
print("ready", flush=True)
fd = os.open(os.path.join(jobdir, "b.csv"), os.O_RDONLY)  # returns when a writer opens the FIFO
os.rename(jobdir, jobdir + ".moved")
os.symlink(victim, jobdir)
print("swapped", flush=True)
while os.read(fd, 65536):
    pass
"""

#: Runs as the student: swaps a directory of theirs (a job's) for a symlink to the victim and back, as fast
#: as it can, until it is stopped.
SWAP_LOOP = r"""
import os, sys
userdir, victim = sys.argv[1], sys.argv[2]
os.makedirs(userdir, exist_ok=True)
print("ready", flush=True)
swaps = 0
while not os.path.exists(userdir + ".stop"):
    try:
        os.rename(userdir, userdir + ".real")
        os.symlink(victim, userdir)
        os.unlink(userdir)
        os.rename(userdir + ".real", userdir)
        swaps += 1
    except OSError:
        pass
print(swaps, flush=True)
"""


@pytest.fixture
def victim() -> Iterator[Path]:
    """A root-owned directory outside every student's tree, with files the attack aims at."""
    folder = Path(tempfile.mkdtemp(dir=JOB_ROOT_BASE, prefix="victim-"))
    folder.chmod(0o755)
    for name in ("job.sh", "b.csv", "a.csv"):
        (folder / name).write_text(f"root's own {name}\n")
        (folder / name).chmod(0o644)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def snapshot(folder: Path) -> dict[str, tuple[int, int, int, bytes]]:
    """Owner, group, mode and content of everything in the folder."""
    seen = {}
    for path in sorted(folder.rglob("*")):
        info = os.lstat(path)
        content = path.read_bytes() if stat.S_ISREG(info.st_mode) else b""
        seen[str(path.relative_to(folder))] = (info.st_uid, info.st_gid, info.st_mode, content)
    return seen


def as_student(program: str, *args: str) -> subprocess.Popen:
    process = subprocess.Popen(
        ["runuser", "-u", "student1", "--", "/usr/bin/python3", "-c", program, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # so the test can end the student's process, not only runuser
    )
    assert process.stdout.readline().strip() == "ready", process.stderr.read()
    return process


def end(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=10)


def submitted(client, student, **files: bytes) -> Job:
    client.force_login(student)
    uploads = [SimpleUploadedFile(name, content) for name, content in files.items()]
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), submit_form(uploads=uploads))
    assert response.status_code == 302, response.content.decode()[:2000]
    return Job.objects.latest("pk")


def test_a_fifo_named_like_an_upload_and_a_directory_swap_change_nothing_outside_the_students_tree(
    client, student, assignment, settings, victim
):
    job = submitted(client, student, **{"a.csv": b"1,2\n", "b.csv": b"3,4\n"})
    before = snapshot(victim)
    attacker = as_student(FIFO_AND_SWAP, job.workdir, str(victim))
    try:
        dispatch_as_service_account(job.pk, settings)  # fails the test if the worker blocks
        attacker.wait(timeout=30)
    finally:
        end(attacker)

    assert snapshot(victim) == before, "a file outside the student's tree changed"
    job.refresh_from_db()
    assert job.status == Status.REJECTED and not job.slurm_job_id
    assert job.message == "'b.csv' in the job directory is not a regular file; remove it and try again."
    page = client.get(reverse("jobs:job-detail", args=[job.uuid])).content.decode()
    assert "is not a regular file; remove it and try again." in page


def test_a_fifo_planted_as_the_job_script_does_not_block_the_worker(client, student, assignment, settings):
    job = submitted(client, student)
    planted = subprocess.run(
        [
            "runuser",
            "-u",
            "student1",
            "--",
            "/usr/bin/python3",
            "-c",
            "import os, sys; os.makedirs(sys.argv[1]); os.mkfifo(os.path.join(sys.argv[1], 'job.sh'))",
            job.workdir,
        ],
        capture_output=True,
        text=True,
    )
    assert planted.returncode == 0, planted.stderr

    dispatch_as_service_account(job.pk, settings)  # nobody reads the FIFO: a blocking open would hang here

    job.refresh_from_db()
    assert job.status == Status.REJECTED
    assert job.message == "'job.sh' in the job directory is not a regular file; remove it and try again."
    assert stat.S_ISFIFO(os.lstat(Path(job.workdir) / "job.sh").st_mode), "the student's FIFO was left alone"


def test_a_looping_symlink_swap_race_never_reaches_a_file_outside_the_students_tree(
    client, student, assignment, settings, victim, job_root
):
    jobs = [submitted(client, student, **{"data.csv": b"5,6\n"}) for _ in range(4)]
    # The student's own folder cannot be swapped (only root writes the job root): the first job's directory is.
    userdir = Path(jobs[0].workdir)
    before, root_before = snapshot(victim), snapshot(job_root)
    attacker = as_student(SWAP_LOOP, str(userdir), str(victim))
    try:
        for job in jobs:
            dispatch_as_service_account(job.pk, settings)
    finally:
        Path(str(userdir) + ".stop").touch()
        try:
            swaps = int(attacker.communicate(timeout=30)[0].strip() or 0)
        finally:
            end(attacker)
    assert swaps > 0, "the attack ran"

    assert snapshot(victim) == before, "a file outside the student's tree changed"
    outside = {path: facts for path, facts in snapshot(job_root).items() if not path.startswith("student1")}
    assert outside == {path: facts for path, facts in root_before.items() if not path.startswith("student1")}
    student_uid = pwd.getpwnam("student1").pw_uid
    for job in jobs:
        job.refresh_from_db()
        assert job.status in (Status.PENDING, Status.REJECTED), (job.status, job.message)
        if job.status == Status.REJECTED:  # the helper's or sbatch's own words, whichever met the swap
            assert job.message, "a refused job says why"
    for path in userdir.rglob("*"):
        assert os.lstat(path).st_uid == student_uid, f"{path} is the student's"


def test_a_dispatch_that_keeps_failing_on_the_portals_side_ends_refused_with_the_reason(
    client, student, assignment, settings
):
    job = submitted(client, student)
    # A helper path the sudoers rule does not name: sudo refuses, as on a worker deployed without the rule.
    dispatch_as_service_account(job.pk, settings, LABQUEUE_JOBDIR_HELPER="/usr/bin/true")

    job.refresh_from_db()
    assert job.status == Status.REJECTED and job.local_failures == settings.LABQUEUE_DISPATCH_LOCAL_FAILURES
    assert job.message.startswith("The portal tried 3 times to send your job to the cluster and failed each time")
    assert (
        "(the job directory could not be prepared: sbatch could not be run on the worker: sudo: a password is required)"
        in job.message
    )
    assert "This is a fault on the portal's side, not in your job" in job.message
    assert job.events.filter(from_status=Status.SUBMITTING, to_status=Status.QUEUED).count() == 2, (
        "sent again twice, then refused"
    )


def test_the_service_account_may_run_only_scancel_and_the_helper_and_the_helper_only_the_named_sbatch():
    helper, job_uuid = "/usr/local/libexec/labqueue-jobdir", "00000000-0000-0000-0000-000000000000"

    def sudo(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["runuser", "-u", "labqueue", "--", "sudo", "-n", *argv],
            capture_output=True,
            text=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
        )

    def refused_by_sudo(*argv: str) -> bool:
        done = sudo(*argv)
        return done.returncode == 1 and "a password is required" in done.stderr

    assert sudo("-u", "student1", "/usr/bin/scancel", "--version").returncode == 0
    ran = sudo("-u", "student1", helper, "submit", "/usr/bin/sbatch", "/nonexistent", "student1", job_uuid, "--version")
    assert ran.returncode == 3 and "/nonexistent cannot be opened" in ran.stderr, "the helper ran, and refused"
    ran = sudo("-u", "student1", helper, "remove", "/nonexistent", "student1", job_uuid)
    assert ran.returncode == 3 and "/nonexistent cannot be opened" in ran.stderr, "the helper ran, and refused"
    assert refused_by_sudo("-u", "student1", helper, "submit", "/bin/sh", "/x", "student1", job_uuid, "-c", "id")
    assert refused_by_sudo("-u", "student1", helper, "submit", "/tmp/sbatch", "/x", "student1", job_uuid)
    assert refused_by_sudo("-u", "student1", helper), "no mode: not in the rule"
    # The rollback line of the release before (sbatch with any arguments, the helper's `prepare`) is gone.
    assert refused_by_sudo("-u", "student1", "/usr/bin/sbatch", "--version")
    assert refused_by_sudo("-u", "student1", helper, "prepare", "/nonexistent", "student1", job_uuid)
    ran = sudo("-u", "root", helper, "provision", "/nonexistent", "student1")
    assert ran.returncode == 3 and "/nonexistent cannot be opened" in ran.stderr, "as root: only `provision`"
    assert refused_by_sudo("-u", "root", helper, "submit", "/usr/bin/sbatch", "/x", "root", job_uuid)
    assert refused_by_sudo("-u", "root", "/usr/bin/sbatch", "--version")
    assert refused_by_sudo("-u", "root", helper, "remove", "/x", "root", job_uuid)
    assert refused_by_sudo("-u", "root", "/usr/bin/scancel", "--version")
    assert refused_by_sudo("-u", "nobody", "/usr/bin/scancel", "--version"), "nobody is not in the students group"
    assert refused_by_sudo("-u", "student1", "/bin/sh", "-c", "id")
    assert refused_by_sudo("-u", "student1", "/usr/bin/squeue")


def test_the_sudoers_rule_the_readme_gives_is_the_one_installed_and_tested():
    rule = (Path(__file__).resolve().parents[2] / "deploy" / "sudoers.labqueue").read_text()
    assert Path("/etc/sudoers.d/labqueue").read_text() == rule
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for line in rule.splitlines():
        if line and not line.startswith("#"):
            assert line in readme, f"README lacks: {line}"
