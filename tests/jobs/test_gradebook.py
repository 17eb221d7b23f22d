"""The gradebook: per assignment, each student's attempts, best and last check score and late flag, for the
course's staff, and a CSV for an LMS gradebook that says what the page says. The jobs and their checks are
rows as the sync leaves them (tests/jobs/test_checks.py runs real checks on the cluster)."""

import csv
import html
import io
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.urls import reverse
from django.utils import timezone

from jobs.models import CheckRun, CheckStatus, Job, Status
from tests.conftest import job_row

PAGE = reverse("jobs:gradebook-detail", args=["cs101", "hello"])
CSV = reverse("jobs:gradebook-csv", args=["cs101", "hello"])
INDEX = reverse("jobs:gradebook-index", args=["cs101"])


def attempt(user, assignment, *, score=None, most=10, late=False, minutes_ago=0, results=()) -> Job:
    """A completed attempt, `minutes_ago` old, whose check gave `score` out of `most` (None: no check)."""
    job = job_row(user, assignment, status=Status.COMPLETED, late=late)
    Job.objects.filter(pk=job.pk).update(created_at=timezone.now() - timedelta(minutes=minutes_ago))
    if score is not None:
        CheckRun.objects.create(
            job=job,
            status=CheckStatus.DONE,
            score=Decimal(score),
            max_score=Decimal(most),
            results=[{"passed": passed, "name": name, "message": ""} for name, passed in results],
        )
    return job


def page_rows(client) -> list[list[str]]:
    """(netid, name, best score, late) of each row of the gradebook page, as the page shows them."""
    page = client.get(PAGE).content.decode()
    rows = []
    for row in re.findall(r'<tr class="grade-row">(.*?)</tr>', page, re.DOTALL):
        cell = {name: re.search(rf'<td class="{name}">(.*?)</td>', row, re.DOTALL)[1] for name in ("netid", "name")}
        points = re.search(r'<span class="points">(.*?)</span>', row)[1]
        late = re.search(r'<td class="late">(.*?)</td>', row)[1]
        rows.append([html.unescape(cell["netid"]), html.unescape(cell["name"]), points, late])
    return rows


def csv_rows(client) -> list[list[str]]:
    response = client.get(CSV)
    assert response["Content-Type"] == "text/csv; charset=utf-8"
    return list(csv.reader(io.StringIO(response.content.decode())))


@pytest.fixture
def graded(student, classmate, assignment):
    """student1: three attempts (4/10 on time, 9/10 late, 6/10 on time, the last); student2: none."""
    attempt(student, assignment, score=4, minutes_ago=30)
    attempt(student, assignment, score=9, late=True, minutes_ago=20)
    attempt(student, assignment, score=6, minutes_ago=10, results=[("output", True), ("accuracy", False)])


def test_a_ta_sees_each_students_attempts_best_and_last_score_and_late_flag(client, ta, graded):
    client.force_login(ta)
    page = html.unescape(client.get(PAGE).content.decode())
    first, second = re.findall(r'<tr class="grade-row">(.*?)</tr>', page, re.DOTALL)
    assert '<td class="netid">student1</td>' in first and '<td class="attempts">3</td>' in first
    assert '<span class="points">9</span></a> / 10' in first
    assert '<td class="last">6 / 10</td>' in first and '<td class="late">yes</td>' in first
    assert "✓ output, ✗ accuracy" in first
    assert '<td class="netid">student2</td>' in second and '<td class="attempts">0</td>' in second
    assert "no attempt" in second and '<td class="late">no</td>' in second


def test_the_csv_says_what_the_page_says(client, instructor, graded):
    client.force_login(instructor)
    rows = csv_rows(client)
    assert rows[0] == ["netid", "name", "score", "late"]
    assert rows[1:] == page_rows(client) == [["student1", "Student1", "9", "yes"], ["student2", "Student2", "", "no"]]


def test_the_best_score_is_the_highest_share_of_its_maximum(client, ta, student, assignment):
    attempt(student, assignment, score=9, most=10, minutes_ago=20)
    attempt(student, assignment, score="4.5", most=5, minutes_ago=10)
    attempt(student, assignment, minutes_ago=5)  # the last attempt's check has not given a score
    client.force_login(ta)
    assert csv_rows(client)[1] == ["student1", "Student1", "4.5", "no"]
    assert '<td class="last"><span class="muted">none</span></td>' in client.get(PAGE).content.decode()


def test_without_any_score_the_late_flag_is_the_last_attempts(client, ta, student, assignment):
    attempt(student, assignment, minutes_ago=20)
    attempt(student, assignment, late=True, minutes_ago=10)
    client.force_login(ta)
    assert csv_rows(client)[1] == ["student1", "Student1", "", "yes"]


def test_a_name_that_reads_as_a_formula_is_written_as_text(client, ta, student, assignment):
    student.first_name, student.last_name = '=HYPERLINK("http://x")', ""
    student.save()
    attempt(student, assignment, score=1)
    client.force_login(ta)
    assert csv_rows(client)[1][1] == '\'=HYPERLINK("http://x")'


def test_the_course_jobs_page_links_the_gradebook_and_it_lists_the_assignments(client, ta, assignment):
    client.force_login(ta)
    assert INDEX in client.get(reverse("jobs:course-jobs", args=["cs101"])).content.decode()
    index = client.get(INDEX)
    assert index.status_code == 200 and PAGE in index.content.decode()


@pytest.mark.parametrize("url", [PAGE, CSV, INDEX])
def test_anonymous_visitors_are_sent_to_sign_in(client, assignment, url):
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith(reverse("account_login"))


@pytest.mark.parametrize("url", [PAGE, CSV, INDEX])
def test_a_student_of_the_course_is_refused(client, student, graded, url):
    client.force_login(student)
    assert client.get(url).status_code == 403


@pytest.mark.parametrize("url", [PAGE, CSV, INDEX])
def test_staff_of_another_course_get_not_found(client, other_ta, graded, url):
    client.force_login(other_ta)
    assert client.get(url).status_code == 404


def test_an_unknown_assignment_is_not_found(client, ta, assignment):
    client.force_login(ta)
    assert client.get(reverse("jobs:gradebook-detail", args=["cs101", "nope"])).status_code == 404


@pytest.mark.parametrize("url", [PAGE, CSV, INDEX])
def test_the_gradebook_only_answers_get(client, ta, assignment, url):
    client.force_login(ta)
    assert client.post(url).status_code == 405
