"""The tests on the lab's two clusters (lab, and lab2 of scripts/labcluster up-lab2): lab2 up and clear of what
other tests left there, and the second course (cs102) bound to one of the clusters or to their federation.

The fixtures are imported by tests/conftest.py, so every test module can ask for them."""

import subprocess
import time
from collections.abc import Iterator

import pytest

from courses.models import Assignment, Course, Role
from tests.lab import labcluster, slurm_tool

HELLO = 'echo "on $(hostname -s) $SLURMD_NODENAME as $(whoami)"; sleep "$SECONDS_TO_SLEEP"'


def _lab2(*args: str) -> str:
    done = subprocess.run(
        [slurm_tool(args[0]), "-M", "lab2", *args[1:]], capture_output=True, text=True, timeout=30, check=False
    )
    return done.stdout


def _portal_jobs_on_lab2() -> list[str]:
    """The jobs on lab2 that portals and tests sent (their names start lq-): none outlives its test."""
    rows = (line.split("|", 1) for line in _lab2("squeue", "-h", "-a", "-o", "%i|%j").splitlines())
    return [job_id for job_id, name in rows if name.startswith("lq-")]


def _portal_reservations_on_lab2() -> list[str]:
    rows = _lab2("scontrol", "-o", "show", "reservation").split()
    return [word.removeprefix("ReservationName=") for word in rows if word.startswith("ReservationName=lq-")]


def clear_lab2() -> None:
    """Cancel the portal's jobs and delete the portal's reservations on lab2, and wait until they are gone.

    One run of the suite has the lab to itself, so whatever is there was left by an earlier test (one that
    failed, or a run that was interrupted). Left there, a job counts on its course's account in the next test's
    report, and a lab's reservation holds a node the next test's lab needs."""
    jobs, reservations = _portal_jobs_on_lab2(), _portal_reservations_on_lab2()
    if jobs:
        _lab2("scancel", *jobs)
    for name in reservations:
        _lab2("scontrol", "delete", f"reservationname={name}")
    deadline = time.monotonic() + 30
    while (jobs and _portal_jobs_on_lab2()) or (reservations and _portal_reservations_on_lab2()):
        assert time.monotonic() < deadline, f"lab2 still has {_portal_jobs_on_lab2()} {_portal_reservations_on_lab2()}"
        time.sleep(0.2)
    if jobs:
        time.sleep(1)  # accounting has whole seconds: a test's window that opens now starts after those jobs ended


@pytest.fixture
def lab2(settings) -> Iterator[str]:
    """lab2 up and clear of portal jobs and reservations, before the test and after it, whatever happened."""
    labcluster("up-lab2")  # quick when it already runs
    clear_lab2()
    settings.LABQUEUE_SLURM_OTHER_CLUSTERS = ["lab2"]
    settings.LABQUEUE_SYNC_SECONDS = 1
    yield "lab2"
    clear_lab2()


def course_bound_to(course: Course, cluster: str, *, student, title: str) -> Course:
    """`course` bound to `cluster` (checked as the admin checks it), with `student` in it and a one-GPU assignment
    `hello` that sleeps SECONDS_TO_SLEEP (lab2 has lab's accounts and users)."""
    course.cluster = cluster
    course.partition = "gpu"
    course.max_minutes_per_job = 30
    course.full_clean()
    course.save()
    course.enrollments.create(user=student, role=Role.STUDENT)
    Assignment.objects.create(
        course=course,
        slug="hello",
        title=title,
        script_template=HELLO,
        parameters=[{"name": "SECONDS_TO_SLEEP", "type": "int", "default": 0, "min": 0, "max": 600}],
        gpus=1,
        minutes=5,
    )
    return course


@pytest.fixture
def course_on_lab2(other_course, student, lab2) -> Course:
    """cs102 on lab2, with student1 in it."""
    return course_bound_to(other_course, lab2, student=student, title="Hello lab2")
