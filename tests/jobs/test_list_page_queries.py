"""The job lists cost the same number of queries for a few jobs and for many (no query per row)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from courses.models import Role
from jobs.models import Status
from tests.conftest import job_row, make_user

pytestmark = pytest.mark.django_db


def queries_for(client, url: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return len(queries.captured_queries)


def more_students_with_jobs(course, assignment, count: int, first: int) -> None:
    for number in range(first, first + count):
        user = make_user(f"bulk{number}", f"bulk{number}")
        course.enrollments.create(user=user, role=Role.STUDENT)
        job_row(user, assignment, status=Status.FAILED)
        job_row(user, assignment, status=Status.COMPLETED)


@pytest.mark.parametrize(
    "url",
    ["/jobs/course/cs101/", "/jobs/course/cs101/failed/", "/jobs/course/cs101/?status=failed"],
)
def test_a_course_job_list_costs_the_same_queries_for_2_and_for_40_students(client, ta, course, assignment, url):
    client.force_login(ta)
    more_students_with_jobs(course, assignment, 2, first=1)
    few = queries_for(client, url)
    more_students_with_jobs(course, assignment, 38, first=3)
    assert queries_for(client, url) == few


def test_my_jobs_costs_the_same_queries_for_2_and_for_40_jobs(client, student, assignment):
    client.force_login(student)
    for _ in range(2):
        job_row(student, assignment, status=Status.FAILED)
    few = queries_for(client, "/jobs/")
    for _ in range(38):
        job_row(student, assignment, status=Status.COMPLETED)
    assert queries_for(client, "/jobs/") == few
