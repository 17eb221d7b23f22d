"""Personas, a course with an assignment, and helpers to drive jobs on the real lab cluster.

Jobs really run: the lab cluster (scripts/labcluster) must be up; `make test` brings it up.
Each test that uses the database gets its own job root under /var/lib/labqueue/test-jobs, set up
like a production one (README, "Privilege model"): owned by root, group labqueue, mode 2751, so
students cannot create anything in it (the job-directory helper's `provision`, run as root, makes
each student's own folder) and the portal's service account can read them. Pure tests (parsers,
scripting, policy plans) use no database (pytest-django refuses them one) and get no job root: they
run without root and without the cluster.
"""

import grp
import json
import os
import pwd
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from courses.models import Assignment, Course, Dataset, Role
from jobs.dispatch import job_dispatch, jobs_sync
from jobs.models import Job
from tests.helper_install import jobdir_helper_install
from tests.lab import TEST_SITE_CEILINGS, slurm_tool
from tests.local_passwords import local_passwords_on  # noqa: F401 (a fixture for every test)
from tests.smtp_server import smtp_server  # noqa: F401 (a fixture for every test: a real SMTP server)
from tests.two_clusters import course_on_lab2, lab2  # noqa: F401 (the fixtures of the tests on two clusters)

JOB_ROOT_BASE = Path("/var/lib/labqueue/test-jobs")
REPO = Path(__file__).resolve().parent.parent

ECHO_SCRIPT = """\
echo "user=$(whoami)"
echo "gpus=$CUDA_VISIBLE_DEVICES"
echo "epochs=$EPOCHS rate=$RATE size=$SIZE name=$NAME"
mkdir -p results
echo "done $NAME" > results/out.txt
"""
PARAMETERS = [
    {"name": "EPOCHS", "type": "int", "default": 2, "min": 1, "max": 10},
    {"name": "RATE", "type": "float", "default": 0.5, "min": 0.0, "max": 1.0},
    {"name": "SIZE", "type": "choice", "choices": ["small", "large"], "default": "small"},
    {"name": "NAME", "type": "string", "default": "run", "pattern": ".*"},
]


def pytest_configure(config) -> None:
    """Test users' passwords are hashed with a fast hasher (Django's advice for tests): the default takes
    about half a second per user here, and almost every test makes several."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# What a test needs that makes it impure: the database (and the client, whose sessions live there) or a server.
IMPURE_FIXTURES = {"db", "transactional_db", "django_db_setup", "client", "admin_client", "live_server"}


def _pure(item: pytest.Item) -> bool:
    """A test that needs neither the database nor the lab cluster (the `slurm` marker)."""
    return not (
        IMPURE_FIXTURES & set(item.fixturenames)
        or item.get_closest_marker("django_db")
        or item.get_closest_marker("slurm")
    )


def pytest_collection_modifyitems(config, items) -> None:
    """LABQUEUE_TESTS_PURE_ONLY=1 keeps only the pure tests (`make mutate-pure`: mutants side by side, with
    nothing shared to trip over); LABQUEUE_TESTS_NO_CLUSTER=1 only those that leave the lab cluster alone
    (`make mutate-nocluster`, beside a run that has the cluster); LABQUEUE_TESTS_ONLY (paths,
    space-separated) only the tests under them (`make mutate-slurm24`: those that run on the second lab cluster).

    Under `make mutate`, the fastest tests run first. mutmut stops at a mutant's first failing test (-x)
    and hands its tests over in no set order, so a killed mutant would otherwise often wait for a slow
    cluster test before the quick one that catches it. The durations are those mutmut measured."""
    if os.environ.get("LABQUEUE_TESTS_PURE_ONLY"):
        config.hook.pytest_deselected(items=[item for item in items if not _pure(item)])
        items[:] = [item for item in items if _pure(item)]
    if os.environ.get("LABQUEUE_TESTS_NO_CLUSTER"):
        config.hook.pytest_deselected(items=[item for item in items if item.get_closest_marker("slurm")])
        items[:] = [item for item in items if not item.get_closest_marker("slurm")]
    if only := tuple(os.environ.get("LABQUEUE_TESTS_ONLY", "").split()):
        config.hook.pytest_deselected(items=[item for item in items if not item.nodeid.startswith(only)])
        items[:] = [item for item in items if item.nodeid.startswith(only)]
    stats = Path("mutmut-stats.json")
    if not os.environ.get("MUTANT_UNDER_TEST") or not stats.exists():
        return
    durations = json.loads(stats.read_text())["duration_by_test"]
    items.sort(key=lambda item: durations.get(item.nodeid, float("inf")))


def _uses_database(request: pytest.FixtureRequest) -> bool:
    return bool({"db", "transactional_db"} & set(request.fixturenames)) or bool(
        request.node.get_closest_marker("django_db")
    )


@pytest.fixture
def jobdir_helper() -> str:
    """The job-directory helper the sudoers rule names, the same as this checkout's (checked before each test)."""
    return jobdir_helper_install()


@pytest.fixture(autouse=True)
def job_root(request: pytest.FixtureRequest, tmp_path):
    if not _uses_database(request):  # a pure test: no job can be made, no root needed
        yield None
        return
    settings = request.getfixturevalue("settings")
    settings.LABQUEUE_JOBDIR_HELPER = request.getfixturevalue("jobdir_helper")
    JOB_ROOT_BASE.mkdir(parents=True, exist_ok=True)
    os.chmod(JOB_ROOT_BASE, 0o755)
    root = JOB_ROOT_BASE / uuid.uuid4().hex[:12]
    root.mkdir()
    os.chown(root, 0, grp.getgrnam("labqueue").gr_gid)
    os.chmod(root, 0o2751)
    for netid in STUDENTS:
        student_folder(root, netid)
    settings.LABQUEUE_JOB_ROOT = root
    settings.MEDIA_ROOT = tmp_path / "media"
    for name, value in TEST_SITE_CEILINGS.items():
        setattr(settings, name, int(value))
    yield root
    cancel_jobs_under(root)
    shutil.rmtree(root, ignore_errors=True)


#: The lab's students (scripts/labcluster): the members of group `students`, each with a folder in a test's job root.
STUDENTS = ("student1", "student2", "student3", "student4")


def student_folder(root: Path, netid: str) -> Path:
    """<root>/<netid> as the helper's `provision` makes it (owned by the student, group labqueue, 2750): what a
    student has after their first job. Made here directly, as root, because nearly every test needs one; the
    worker's own provisioning is tested on a job root without them (tests/security/test_jobdir_provision.py)."""
    folder = root / netid
    folder.mkdir(mode=0o750)
    os.chown(folder, pwd.getpwnam(netid).pw_uid, grp.getgrnam("labqueue").gr_gid)
    os.chmod(folder, 0o2750)
    return folder


def cancel_jobs_under(root: Path) -> None:
    """Cancel the Slurm jobs this test left behind, even when it failed: every job whose working
    directory is under the test's own job root (other tests' and other runs' jobs are left alone)."""
    try:
        listing = subprocess.run(
            [slurm_tool("squeue"), "-h", "-a", "-o", "%i|%Z"], capture_output=True, text=True, timeout=15, check=True
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return  # the cluster is down: nothing of ours can be running either
    rows = (line.partition("|") for line in listing.splitlines())
    ours = [job_id for job_id, _, workdir in rows if workdir == str(root) or workdir.startswith(f"{root}/")]
    if ours:
        subprocess.run([slurm_tool("scancel"), *ours], capture_output=True, timeout=15, check=False)


def job_row(user, assignment, **fields) -> Job:
    """A Job row as the portal would hold it, made directly (no submission, no Slurm job): small
    resources, no script, no job directory; `fields` override any of them."""
    values = {
        "run_as": user.netid,
        "gpus": 0,
        "cpus": 1,
        "mem_mb": 100,
        "minutes": 1,
        "account": "cs101",
        "script": "",
        "workdir": "/nonexistent",
    }
    return Job.objects.create(user=user, assignment=assignment, **{**values, **fields})


def make_user(username: str, netid: str | None = None, **extra):
    return get_user_model().objects.create_user(
        username=username, password="pw-" + username, netid=netid, first_name=username.title(), **extra
    )


@pytest.fixture
def course(db) -> Course:
    return Course.objects.create(
        slug="cs101",
        code="CS101",
        title="GPU Computing",
        term="Fall",
        slurm_account="cs101",
        partition="gpu",
        max_gpus_per_job=2,
        max_cpus_per_job=4,
        max_mem_mb_per_job=4000,
        max_minutes_per_job=30,
    )


@pytest.fixture
def other_course(db) -> Course:
    return Course.objects.create(slug="cs102", code="CS102", title="Other", term="Fall", slurm_account="cs102")


def _enroll(user, course, role):
    course.enrollments.create(user=user, role=role)
    return user


@pytest.fixture
def student(course):
    return _enroll(make_user("student1", "student1"), course, Role.STUDENT)


@pytest.fixture
def classmate(course):
    return _enroll(make_user("student2", "student2"), course, Role.STUDENT)


@pytest.fixture
def ta(course):
    return _enroll(make_user("ta1", "ta1"), course, Role.TA)


@pytest.fixture
def instructor(course):
    return _enroll(make_user("instructor1", "instructor1"), course, Role.INSTRUCTOR)


@pytest.fixture
def outsider(other_course):
    """Enrolled in another course only."""
    return _enroll(make_user("student3", "student3"), other_course, Role.STUDENT)


@pytest.fixture
def other_ta(other_course):
    return _enroll(make_user("ta-other", None), other_course, Role.TA)


@pytest.fixture
def dataset(course) -> Dataset:
    path = Path("/var/lib/labqueue/test-datasets/sample")
    path.mkdir(parents=True, exist_ok=True)
    return Dataset.objects.create(course=course, name="Sample", path=str(path))


@pytest.fixture
def assignment(course) -> Assignment:
    return Assignment.objects.create(
        course=course,
        slug="hello",
        title="Hello GPU",
        script_template=ECHO_SCRIPT,
        parameters=PARAMETERS,
        gpus=1,
        cpus=1,
        mem_mb=500,
        minutes=5,
    )


def submit_form(**overrides) -> dict:
    data = {
        "param_EPOCHS": "2",
        "param_RATE": "0.5",
        "param_SIZE": "small",
        "param_NAME": "run",
        "gpus": "1",
        "cpus": "1",
        "mem_mb": "500",
        "minutes": "5",
    }
    data.update(overrides)
    return data


def submitted(client, user, **files: bytes) -> Job:
    """A job `user` submitted through the job form of cs101's hello assignment, uploading `files` (name: bytes)."""
    client.force_login(user)
    uploads = [SimpleUploadedFile(name, content) for name, content in files.items()]
    form = submit_form(**({"uploads": uploads} if uploads else {}))
    response = client.post(reverse("jobs:job-create", args=["cs101", "hello"]), form)
    assert response.status_code == 302, response.content.decode()[:2000]
    return Job.objects.filter(user=user).latest("pk")


def dispatch(job: Job) -> Job:
    """Do what the Celery submit task does for this job, then reload it."""
    job_dispatch(job_id=job.pk)
    job.refresh_from_db()
    return job


def wait_for_status(job: Job, *statuses: str, timeout: float = 90) -> Job:
    """Run the sync (as Celery beat would) until the job reaches one of the statuses."""
    deadline = time.monotonic() + timeout
    while True:
        jobs_sync()
        job.refresh_from_db()
        if job.status in statuses:
            return job
        if time.monotonic() > deadline:
            raise AssertionError(f"job stayed {job.status} ({job.slurm_state} {job.reason}); wanted {statuses}")
        time.sleep(0.5)
