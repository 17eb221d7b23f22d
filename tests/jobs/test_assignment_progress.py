"""The course page tells its TAs and instructors how each assignment is going: of the enrolled students, how many
submitted, not yet, late, with a failed job and with full marks from the check, each a link to the list that
shows them; in a constant number of queries however many students; students do not see it.

No cluster: the jobs and their checks are rows as the sync leaves them."""

import re
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from courses.models import Assignment, Role
from jobs.models import CheckRun, CheckStatus, Status
from jobs.selectors import assignment_progress_list
from tests.conftest import job_row, make_user

COURSE = reverse("courses:course-detail", args=["cs101"])
COLUMNS = ("submitted", "not-yet", "late", "failing", "passing")


def enrolled(course, netid: str):
    user = make_user(netid, netid)
    course.enrollments.create(user=user, role=Role.STUDENT)
    return user


def checked(job, score: int, most: int = 10) -> None:
    CheckRun.objects.create(job=job, status=CheckStatus.DONE, score=Decimal(score), max_score=Decimal(most))


def progress(client) -> dict[str, dict[str, str]]:
    """assignment slug -> column -> the number the course page shows."""
    page = client.get(COURSE).content.decode()
    rows = re.findall(r'<tr class="progress-row" data-assignment="([^"]+)">(.*?)</tr>', page, re.DOTALL)
    return {
        slug: {
            column: re.search(rf'<td class="{column}">(?:<a [^>]*>|<span [^>]*>)?([^<]+)', row)[1] for column in COLUMNS
        }
        for slug, row in rows
    }


@pytest.fixture
def term(course, student, classmate, ta, assignment):
    """hello (with a check): student1 completed late with full marks; student2 failed, then 5/10; student3's job
    was refused; student4 has none; the TA's own test job is not counted. lab2 (no check): nobody yet."""
    Assignment.objects.filter(pk=assignment.pk).update(check_script='echo "CHECK pass output: ok"')
    third, fourth = enrolled(course, "student3"), enrolled(course, "student4")
    checked(job_row(student, assignment, status=Status.COMPLETED, late=True), 10)
    job_row(classmate, assignment, status=Status.FAILED)
    checked(job_row(classmate, assignment, status=Status.COMPLETED), 5)
    job_row(third, assignment, status=Status.REJECTED)
    checked(job_row(ta, assignment, status=Status.COMPLETED, late=True), 10)
    Assignment.objects.create(course=course, slug="lab2", title="Lab 2", script_template="echo hi")
    return fourth


def test_the_instructor_sees_per_assignment_counts_of_students(client, instructor, term):
    client.force_login(instructor)
    assert progress(client) == {
        "hello": {"submitted": "3", "not-yet": "1", "late": "1", "failing": "2", "passing": "1"},
        "lab2": {"submitted": "0", "not-yet": "4", "late": "0", "failing": "0", "passing": "no check"},
    }


def test_each_count_links_the_list_that_shows_those_students(client, ta, term):
    client.force_login(ta)
    page = client.get(COURSE).content.decode()
    row = re.search(r'<tr class="progress-row" data-assignment="hello">(.*?)</tr>', page, re.DOTALL)[1]
    gradebook = reverse("jobs:gradebook-detail", args=["cs101", "hello"])
    assert f'<td class="submitted"><a href="{reverse("jobs:course-jobs", args=["cs101"])}?assignment=hello"' in row
    assert f'<td class="failing"><a href="{reverse("jobs:course-failures", args=["cs101"])}?assignment=hello"' in row
    for column in ("not-yet", "late", "passing"):
        assert f'<td class="{column}"><a href="{gradebook}"' in row


def test_the_table_scrolls_in_its_own_focusable_region_on_a_phone(client, instructor, term):
    client.force_login(instructor)
    page = client.get(COURSE).content.decode()
    region = re.search(r'<div class="table-scroll"([^>]*)>\s*<table id="assignment-progress">', page)[1]
    assert (
        'tabindex="0"' in region and 'role="region"' in region and 'aria-label="How each assignment is going"' in region
    )


def test_students_do_not_see_how_the_class_is_doing(client, student, term):
    client.force_login(student)
    page = client.get(COURSE)
    assert page.status_code == 200 and b"assignment-progress" not in page.content


def test_the_selector_takes_two_queries_for_one_student_or_many(
    course, ta, student, assignment, django_assert_num_queries
):
    job_row(student, assignment, status=Status.FAILED)
    with django_assert_num_queries(2):
        enrolled_count, assignments = assignment_progress_list(course=course)
    assert enrolled_count == 1 and [(a.submitted, a.failing) for a in assignments] == [(1, 1)]

    for n in range(40):
        user = enrolled(course, f"many{n}")
        checked(job_row(user, assignment, status=Status.COMPLETED, late=n % 2 == 0), n % 11)
    for n in range(5):
        Assignment.objects.create(course=course, slug=f"extra{n}", title=f"Extra {n}", script_template="echo")
    with django_assert_num_queries(2):
        enrolled_count, assignments = assignment_progress_list(course=course)
    hello = next(a for a in assignments if a.slug == "hello")
    assert enrolled_count == 41 and len(assignments) == 6
    assert (hello.submitted, hello.late, hello.failing, hello.passing) == (41, 20, 1, 3)


def test_the_course_page_costs_the_same_queries_for_one_student_or_many(
    client, course, instructor, student, assignment, django_assert_num_queries
):
    job_row(student, assignment, status=Status.COMPLETED)
    client.force_login(instructor)
    client.get(COURSE)  # the session and the user, read once
    with CaptureQueriesContext(connection) as one_student:
        assert client.get(COURSE).status_code == 200
    for n in range(30):
        user = enrolled(course, f"many{n}")
        job_row(user, assignment, status=Status.FAILED if n % 3 else Status.COMPLETED)
    Assignment.objects.create(course=course, slug="lab2", title="Lab 2", script_template="echo")
    with django_assert_num_queries(len(one_student)):
        page = client.get(COURSE)
    assert b'data-assignment="lab2"' in page.content
