"""A click on Submit costs the same small number of SQL statements for a student's first job and for one
with a long history in a busy course (no statement per earlier job), and so does the page it is made on."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from courses.models import Course, Role
from jobs.models import Job, Status
from tests.conftest import job_row, make_user, submit_form

pytestmark = pytest.mark.django_db

PAGE = "/courses/cs101/assignments/hello/"
#: The page: session, user, course, role, assignment and its data sets, labs, the student's recent jobs, and
#: their GPU-hours (finished and running jobs) against the course's budget.
PAGE_STATEMENTS = 10
#: The submission: session, user, course, role, assignment and its data sets, the submission key; then in
#: one transaction (a savepoint) the role again, ceilings, the student's row locked (their requests one after
#: the other), their live jobs, attempts and finished GPU-seconds (one aggregate), the GPU-seconds of their
#: running jobs (the course has a budget), the assignment's script, starter files and data sets against the
#: latest version's digest, the job and its first history row.
SUBMIT_STATEMENTS = 20


def click(client) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as page_queries:
        page = client.get(PAGE)
    assert page.status_code == 200
    key = re.search(r'name="submission_key" value="([^"]+)"', page.content.decode()).group(1)
    with CaptureQueriesContext(connection) as queries:
        answer = client.post(
            reverse("jobs:job-create", args=["cs101", "hello"]), {**submit_form(), "submission_key": key}
        )
    assert answer.status_code == 302, answer.content.decode()[-2000:]
    return len(page_queries.captured_queries), len(queries.captured_queries)


def test_submitting_costs_the_same_statements_for_a_first_job_and_after_a_long_history(
    client, student, assignment, settings
):
    settings.LABQUEUE_CEILING_JOBS_PER_STUDENT = 50  # the history below: 30 running jobs of the student
    Course.objects.update(max_queued_jobs_per_student=50, max_running_jobs_per_student=50, gpu_hours_per_student=1000)
    client.force_login(student)
    click(client)  # the assignment's first job also records the first version of its script

    first = click(client)
    for number in range(30):
        classmate = make_user(f"busy{number}", f"busy{number}")
        assignment.course.enrollments.create(user=classmate, role=Role.STUDENT)
        for status in (Status.RUNNING, Status.COMPLETED, Status.FAILED):
            job_row(classmate, assignment, status=status)
            job_row(student, assignment, status=status)
    later = click(client)

    assert first == later == (PAGE_STATEMENTS, SUBMIT_STATEMENTS)
    assert Job.objects.filter(user=student).count() == 3 + 90
